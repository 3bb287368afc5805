"""Instructions of the demo suite: what a benchmark record asks to click, phrased from the drawn element.

Basic instructions name the element, functional ones say what clicking it does, spatial ones locate it by
a neighbour; :func:`chinese_instruction` writes ScreenSpot-Pro's ``instruction_cn``.
"""

from __future__ import annotations

from collections.abc import Sequence

from gge.benchmarks.demo.screens.elements import Element, Screen
from gge.benchmarks.demo.screens.icons import ICONS

KIND_WORD = {
    "button": "button",
    "icon": "icon",
    "field": "input field",
    "checkbox": "checkbox",
    "radio": "option",
    "toggle": "switch",
    "menu": "menu",
    "tab": "tab",
    "link": "link",
    "list_item": "item",
    "text": "text",
}
KIND_CN = {
    "button": "按钮",
    "icon": "图标",
    "field": "输入框",
    "checkbox": "复选框",
    "radio": "选项",
    "toggle": "开关",
    "menu": "菜单",
    "tab": "标签页",
    "link": "链接",
    "list_item": "列表项",
    "text": "文本",
}
_VERB = {
    "button": "Click {d}",
    "icon": "Click {d}",
    "field": "Click {d}",
    "checkbox": "Tick {d}",
    "radio": "Select {d}",
    "toggle": "Flip {d}",
    "menu": "Open {d}",
    "tab": "Switch to {d}",
    "link": "Follow {d}",
    "list_item": "Select {d}",
    "text": "Click on {d}",
}
_FUNCTION_BY_KIND = {
    "button": "Carry out the {l} action",
    "field": "Enter a new value for {l}",
    "checkbox": "Turn on the {l} option",
    "radio": "Choose {l} as the setting",
    "toggle": "Switch {l} on or off",
    "menu": "Show the commands grouped under {l}",
    "tab": "Bring the {l} page to the front",
    "link": "Go to the {l} page",
    "list_item": "Open {l}",
    "text": "Check what {l} refers to",
}
FUNCTION = {
    "Run Tests": "Run the test suite",
    "Commit": "Record the staged changes in the repository",
    "Sync Changes": "Push and pull the branch with the remote",
    "Install": "Install this extension",
    "Reload Window": "Restart the editor window",
    "Apply": "Apply the changes",
    "Reset": "Undo all edits in this dialog",
    "Export": "Save a copy in another format",
    "Flatten Image": "Merge all layers into one",
    "Finish Sketch": "Leave the sketch mode",
    "Extrude": "Pull the profile into a solid",
    "Revolve": "Sweep the profile around an axis",
    "Measure": "Measure a distance in the model",
    "Run Analysis": "Execute the configured analysis",
    "Plot Data": "Draw a chart of the data",
    "Estimate": "Fit the model to the data",
    "Clear Workspace": "Remove all variables",
    "Share": "Invite someone to this document",
    "Insert Table": "Put a table into the document",
    "Accept All": "Keep every tracked change",
    "Compare": "Compare two versions side by side",
    "Restart Now": "Reboot the computer immediately",
    "Add Printer": "Set up a new printer",
    "Check for Updates": "Look for new software versions",
    "Manage Storage": "See what uses disk space",
    "Study Now": "Start reviewing the due cards",
    "Create Deck": "Make a new deck",
    "Import File": "Load cards from a file",
    "Sync Collection": "Synchronise the cards with the server",
    "Play": "Start playback",
    "Stop": "Stop playback",
    "Open Media": "Choose a media file to play",
    "Save Playlist": "Store the playlist in a file",
    "New Project": "Start a new repository",
    "Clone": "Copy the repository URL",
    "Fork": "Make your own copy of the project",
    "Star": "Show appreciation for the project",
    "Create Issue": "Report a new problem",
    "Run Pipeline": "Start the CI jobs",
    "Edit Wiki": "Change the wiki page",
    "Add to Cart": "Put this product in the basket",
    "Buy Now": "Purchase this item right away",
    "Save for Later": "Keep this product for a later purchase",
    "Notify Me": "Get an alert when it is back",
    "View Details": "See the full description of this product",
    "See Similar": "Find comparable products",
    "New Topic": "Start a new discussion",
    "Reply": "Answer in this thread",
    "Follow": "Get updates from this thread",
    "Share Post": "Send a link to this post",
    "Mark Solved": "Flag the answer as the solution",
    "Subscribe": "Receive e-mails about new posts",
    "Quote": "Cite this post in a reply",
    "Upload File": "Send a file from your computer",
    "Convert Now": "Start the conversion",
    "Download": "Fetch the converted file",
    "Start Free Trial": "Begin the trial period",
    "Choose Files": "Pick files to convert",
    "Get Started": "Begin using the service",
    "Try Demo": "Open the demonstration",
    "Sign Out": "Log out of the account",
    "Reset All Settings": "Restore the factory settings",
    "Checkout": "Pay for the basket",
    "Continue Shopping": "Go back to browsing products",
    "New Chat": "Start a conversation",
    "Invite Friends": "Ask friends to join",
    "Auto Save": "Save files automatically",
    "Format On Save": "Tidy the code whenever it is saved",
    "Minimap": "Show the code overview",
    "Show Grid": "Display the grid lines",
    "Snap to Guides": "Align objects to the guides",
    "Show Hidden Files": "Reveal dot files",
    "Night Light": "Use warmer colours at night",
    "Bluetooth": "Connect wireless devices",
    "Track Changes": "Record every edit",
    "Spell Check": "Underline misspelt words",
    "Free Shipping": "Only show items that ship for free",
    "In Stock Only": "Hide products that are unavailable",
    "Airplane Mode": "Disable all radios",
    "Dark Mode": "Use a dark colour scheme",
    "Read Receipts": "Let others see when messages are read",
    "Loop": "Play the media again at the end",
    "Shuffle": "Play in random order",
    "Wi-Fi": "Manage wireless networks",
    "Battery": "See the battery usage",
    "Downloads": "Open the downloaded files",
    "Trash": "Open the deleted files",
    "File": "Show the file commands",
    "Help": "Open the help menu",
    "Edit": "Show the editing commands",
    "View": "Change how things are displayed",
}


def describe(el: Element) -> str:
    """Noun phrase naming an element: ``"the 'Save' button"``, ``"the star icon"``."""
    if el.kind == "icon":
        return f"the {ICONS[el.label].desc} icon"
    return f"the '{el.label}' {KIND_WORD[el.kind]}"


def basic_instruction(el: Element) -> str:
    """Instruction that names the element: ``"Click the 'Save' button"``."""
    return _VERB[el.kind].format(d=describe(el))


def functional_instruction(el: Element) -> str:
    """Instruction that says what clicking does: ``"Save the current file"``."""
    if el.kind == "icon":
        return ICONS[el.label].function
    return FUNCTION.get(el.label) or _FUNCTION_BY_KIND[el.kind].format(l=el.label)


def _nearest(n: Element, elements: Sequence[Element], direction: str) -> Element | None:
    """The element right next to ``n`` on one side, or None when there is none or two are as near.

    A candidate must face ``n``: its centre lies within ``n``'s span across the direction.
    """
    found: list[tuple[int, Element]] = []
    for e in elements:
        cx, cy = e.center
        if direction in ("right", "left") and n.box[1] <= cy <= n.box[3]:
            gap = e.box[0] - n.box[2] if direction == "right" else n.box[0] - e.box[2]
        elif direction in ("below", "above") and n.box[0] <= cx <= n.box[2]:
            gap = e.box[1] - n.box[3] if direction == "below" else n.box[1] - e.box[3]
        else:
            continue
        if e is not n and gap > 0:
            found.append((gap, e))
    found.sort(key=lambda t: t[0])
    if not found or (len(found) > 1 and found[1][0] - found[0][0] < 4):
        return None
    return found[0][1]


_DIRECTIONS = {"right": "right of", "left": "left of", "below": "below", "above": "above"}


def spatial_instruction(el: Element, elements: Sequence[Element]) -> str | None:
    """Instruction that locates the element by its neighbour, or None when no neighbour pins it down.

    The neighbour ``n`` is chosen so that ``el`` is the nearest element on that side of ``n``.
    """
    ordered = sorted(elements, key=lambda e: (e.kind == "icon", e.box[1], e.box[0]))
    for n in ordered:
        if n is el:
            continue
        for direction, words in _DIRECTIONS.items():
            if _nearest(n, elements, direction) is el:
                return f"Click the {KIND_WORD[el.kind]} immediately {words} {describe(n)}"
    return None


def instruction(el: Element, screen: Screen, style: str) -> str:
    """Instruction of one style (``basic``, ``functional`` or ``spatial``) for a target element."""
    if style == "functional":
        return functional_instruction(el)
    if style == "spatial":
        text = spatial_instruction(el, screen.elements)
        if text:
            return text
    return basic_instruction(el)


def chinese_instruction(el: Element) -> str:
    """``instruction_cn``: a Chinese instruction naming the element."""
    if el.kind == "icon":
        return f"点击{ICONS[el.label].cn}图标"
    return f"点击“{el.label}”{KIND_CN[el.kind]}"
