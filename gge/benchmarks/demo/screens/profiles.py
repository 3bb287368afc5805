"""Vocabulary profiles of the demo screens: the labels an application's screens show.

:data:`PROFILES` maps each profile name to a :class:`Profile`, the pools of menus, icons, rows, fields,
buttons and texts that the layouts draw from.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    """The labels one kind of application shows; layouts draw from these pools without repeats.

    Attributes:
        title: Application title (window title, site name or app bar title).
        nav: Menus (desktop), navigation links (web) or bottom navigation labels (phone).
        tools: Icon names (keys of :data:`ICONS`) for toolbars and app bars.
        side_title: Heading of the side panel.
        items: Side panel rows (desktop), card titles (web) or list rows (phone).
        tabs: Tab labels.
        search: Placeholder of the search field.
        fields: Labelled input fields.
        checks: Checkbox and switch labels.
        radios: Radio button labels (one group).
        buttons: Button labels.
        status: Status bar texts (desktop) or footer links (web).
        heading: Heading of the main form.
    """

    title: str
    nav: tuple[str, ...]
    tools: tuple[str, ...]
    side_title: str
    items: tuple[str, ...]
    tabs: tuple[str, ...]
    search: str
    fields: tuple[str, ...]
    checks: tuple[str, ...]
    radios: tuple[str, ...]
    buttons: tuple[str, ...]
    status: tuple[str, ...]
    heading: str


def _p(
    title: str,
    nav: str,
    tools: str,
    side: str,
    items: str,
    tabs: str,
    search: str,
    fields: str,
    checks: str,
    radios: str,
    buttons: str,
    status: str,
    heading: str,
) -> Profile:
    def split(s: str) -> tuple[str, ...]:
        return tuple(v.strip() for v in s.split("|") if v.strip())

    return Profile(
        title,
        split(nav),
        split(tools),
        side,
        split(items),
        split(tabs),
        search,
        split(fields),
        split(checks),
        split(radios),
        split(buttons),
        split(status),
        heading,
    )


PROFILES: dict[str, Profile] = {
    "code": _p(
        "Visual Studio Code",
        "File|Edit|Selection|View|Go|Run|Terminal|Help",
        "open folder|search|git branch|debug|extensions|run|refresh|settings|terminal|add",
        "EXPLORER",
        "main.py|utils.py|README.md|setup.cfg|requirements.txt|Dockerfile|config.yaml|test_app.py",
        "Welcome|Settings|Extensions|Keyboard Shortcuts",
        "Search files",
        "Font Size|Tab Size|Word Wrap Column|Line Height",
        "Format On Save|Auto Save|Minimap|Bracket Pair Colorization|Sticky Scroll|Render Whitespace",
        "Light|Dark|High Contrast",
        "Run Tests|Commit|Sync Changes|Install|Reload Window",
        "Ln 12, Col 8|UTF-8|Python 3.11|main",
        "Editor Settings",
    ),
    "graphics": _p(
        "Image Editor",
        "File|Edit|Image|Layer|Select|Filter|View|Window|Help",
        "brush|crop|zoom in|layers|edit|grid|camera|add|delete|favourite",
        "LAYERS",
        "Background|Layer 1|Shadow|Text Layer|Mask|Curves 1|Group 2",
        "Properties|Adjustments|Libraries|Swatches",
        "Search tools",
        "Width|Height|Resolution|Opacity",
        "Constrain Proportions|Show Grid|Snap to Guides|Anti-alias|Resample|Lock Transparency",
        "Pixels|Inches|Percent",
        "Apply|Reset|Export|Flatten Image",
        "Doc: 24.3M|Zoom 100%|RGB/8",
        "Image Size",
    ),
    "cad": _p(
        "Part Designer",
        "File|Edit|View|Insert|Format|Tools|Draw|Modify|Dimension",
        "add|edit|grid|zoom in|layers|chart|lock|delete|filter|info",
        "MODEL BROWSER",
        "Origin|Sketch1|Extrusion1|Fillet1|Hole1|Work Plane1|End of Part",
        "3D Model|Sketch|Annotate|Inspect",
        "Search commands",
        "Distance|Angle|Thickness|Radius",
        "Show Dimensions|Snap to Grid|Ortho Mode|Symmetric|Preview|Auto Project",
        "Join|Cut|Intersect",
        "Finish Sketch|Extrude|Revolve|Measure",
        "Ready|Units: mm|Scale 1:1",
        "Extrude",
    ),
    "science": _p(
        "Data Lab",
        "File|Edit|View|Data|Analysis|Plot|Window|Help",
        "open folder|chart|run|debug|grid|filter|zoom in|print|refresh|info",
        "WORKSPACE",
        "data.csv|results.mat|model.m|fig1.fig|sample_A|sample_B|trend.do",
        "Command Window|Variables|Plots|Editor",
        "Search documentation",
        "Sample Size|Significance Level|Lag Order|Iterations",
        "Robust Errors|Include Constant|Log Scale|Show Legend|Hold On|Parallel Pool",
        "Linear|Quadratic|Cubic",
        "Run Analysis|Plot Data|Estimate|Clear Workspace",
        "Ready|Variables: 12|Elapsed 0.42 s",
        "Regression",
    ),
    "office": _p(
        "Word Processor",
        "File|Home|Insert|Design|Layout|References|Review|View",
        "print|edit|grid|chart|share|camera|mail|bookmark|lock|add",
        "NAVIGATION",
        "Introduction|Methods|Results|Discussion|Appendix|Acknowledgements",
        "Headings|Pages|Comments|Styles",
        "Search in document",
        "Font Size|Line Spacing|Left Indent|Page Width",
        "Track Changes|Show Ruler|Spell Check|Hyphenation|Keep with Next|Widow Control",
        "Portrait|Landscape",
        "Share|Insert Table|Accept All|Compare",
        "Page 1 of 4|1,203 words|English (US)",
        "Paragraph",
    ),
    "os": _p(
        "Files",
        "File|Edit|View|Go|Window|Help",
        "back|forward|home|open folder|grid|share|delete|info|search|lock",
        "FAVOURITES",
        "Desktop|Documents|Downloads|Pictures|Music|Network|Trash",
        "General|Display|Sound|Network|Privacy",
        "Search settings",
        "Computer Name|Workgroup|Proxy Host|Port",
        "Show Hidden Files|Night Light|Bluetooth|Automatic Updates|Do Not Disturb|Show Battery Percentage",
        "Wired|Wireless|VPN",
        "Restart Now|Add Printer|Check for Updates|Manage Storage",
        "12 items|38.2 GB available",
        "System",
    ),
    "education": _p(
        "Anki",
        "File|Edit|View|Tools|Help",
        "add|search|chart|settings|refresh|calendar|edit|delete|info",
        "DECKS",
        "Default|Japanese|Biology|Spanish Verbs|World Capitals|Chemistry",
        "Decks|Browse|Stats|Card Types",
        "Search cards",
        "New Cards per Day|Maximum Reviews|Learning Steps|Graduating Interval",
        "Bury Siblings|Show Timer|Autoplay Audio|Show Answer Times",
        "Again|Hard|Good|Easy",
        "Study Now|Create Deck|Import File|Sync Collection",
        "42 cards due|Studied 18 cards",
        "Deck Options",
    ),
    "media": _p(
        "VLC media player",
        "Media|Playback|Audio|Video|Subtitle|Tools|View|Help",
        "run|back|forward|repeat|camera|grid|settings|menu|add",
        "PLAYLIST",
        "intro.mp4|lecture_01.mkv|song.mp3|podcast_12.ogg|trailer.webm",
        "Video|Audio Track|Subtitles|Codec",
        "Search playlist",
        "Playback Speed|Audio Delay|Subtitle Delay|Volume",
        "Loop|Shuffle|Always on Top|Hardware Decoding|Show Spectrum",
        "Stereo|Mono|Surround",
        "Play|Stop|Open Media|Save Playlist",
        "00:12 / 03:45|Speed 1.00x",
        "Adjustments",
    ),
    "w_gitlab": _p(
        "GitLab",
        "Projects|Groups|Issues|Merge Requests|Snippets|Milestones",
        "notifications|add|account|info|menu",
        "Filter projects",
        "gge-core|web-frontend|infra-terraform|docs-site|mobile-app|data-pipeline",
        "Projects · GitLab|Pipelines · GitLab|Merge requests",
        "Search or go to",
        "Branch Name|Commit Message",
        "Delete Source Branch|Squash Commits|Private Only|Show Archived",
        "Last Updated|Name|Most Stars",
        "New Project|Clone|Fork|Star|Create Issue|Run Pipeline|Edit Wiki",
        "About GitLab|Docs|Pricing|Status",
        "Your projects",
    ),
    "w_shop": _p(
        "ShopMart",
        "Deals|Electronics|Books|Fashion|Home & Garden|Sell",
        "account|favourite|notifications|menu|bookmark",
        "Refine results",
        "Wireless Earbuds|Coffee Grinder|Desk Lamp|Running Shoes|Backpack 30L|Smart Watch",
        "ShopMart: Online Shopping|Your Orders|Wish List",
        "Search products",
        "Zip Code|Coupon Code",
        "Free Shipping|In Stock Only|Prime Delivery|Top Rated",
        "Price: Low to High|Newest Arrivals|Best Selling",
        "Add to Cart|Buy Now|Save for Later|Compare|Notify Me|View Details|See Similar",
        "Help|Returns|Gift Cards|Careers",
        "Results",
    ),
    "w_forum": _p(
        "DevTalk",
        "Latest|Top|Categories|Unread|Bookmarks",
        "notifications|account|search|menu|add",
        "Filter topics",
        "Help with PATH variable|Best budget laptop?|Weekly showcase thread|Rust vs Go for CLI tools|"
        "Docker build is slow|Tips for a first marathon",
        "DevTalk Community|Latest topics|My profile",
        "Search topics",
        "Topic Title|Tags",
        "Watch Thread|Hide Solved|Only My Posts|Show Pinned",
        "Hot|New|Top",
        "New Topic|Reply|Follow|Share Post|Mark Solved|Subscribe|Quote",
        "Guidelines|FAQ|Terms of Service|Privacy",
        "Topics",
    ),
    "w_tool": _p(
        "ConvertKit Online",
        "Convert|Compress|Merge|Split|Pricing",
        "account|upload|download|menu|info",
        "Options",
        "PDF to Word|JPG to PNG|Merge PDF|Compress Video|Rotate PDF|Unlock PDF",
        "ConvertKit: free converter|Pricing|My account",
        "Enter a URL",
        "Email Address|Output Name",
        "Keep Metadata|Email Me the Result|OCR Scanned Pages|Delete After Download",
        "High Quality|Balanced|Small File",
        "Upload File|Convert Now|Download|Start Free Trial|Choose Files|Get Started|Try Demo",
        "API|Blog|Contact|Security",
        "Tools",
    ),
    "m_settings": _p(
        "Settings",
        "Home|Search|Alerts|Profile",
        "back|search|more",
        "",
        "Wi-Fi|Bluetooth|Mobile Data|Notifications|Battery|Display|Privacy|Storage|About Phone",
        "General|Connections|Advanced",
        "Search settings",
        "",
        "Airplane Mode|Dark Mode|Auto-rotate|Location|Hotspot",
        "",
        "Sign Out|Reset All Settings",
        "",
        "",
    ),
    "m_shop": _p(
        "ShopNow",
        "Home|Categories|Cart|Account",
        "menu|search|favourite",
        "",
        "Today's Deals|Your Orders|Wish List|Gift Cards|Customer Service|Buy Again|Coupons",
        "For You|Trending|New",
        "Search products",
        "",
        "Fast Delivery|Eco Packaging|Deal Alerts",
        "",
        "Checkout|Continue Shopping",
        "",
        "",
    ),
    "m_social": _p(
        "Messages",
        "Chats|Calls|Stories|Settings",
        "back|search|more",
        "",
        "Alice Martin|Bob Chen|Family Group|Carol Diaz|Work Team|Dan Okafor|Book Club",
        "All|Unread|Groups",
        "Search messages",
        "",
        "Read Receipts|Message Preview|Mute Groups",
        "",
        "New Chat|Invite Friends",
        "",
        "",
    ),
}
