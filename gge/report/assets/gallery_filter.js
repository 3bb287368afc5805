// The results page's gallery filters: shows the cards of the chosen benchmark, table cell and kind of
// miss ("showing N of M"), hides the other benchmarks' cells from the cell menu, then sets
// document.body.dataset.ready = "1".
(function () {
  var root = document.getElementById("gallery");
  var cards = root ? Array.prototype.slice.call(root.querySelectorAll(".card")) : [];
  var bench = document.getElementById("filter-benchmark");
  var cell = document.getElementById("filter-cell");
  var kind = document.getElementById("filter-kind");
  var count = document.getElementById("gallery-count");
  function value(select) { return select ? select.value : ""; }
  function apply() {
    var b = value(bench), c = value(cell), k = value(kind), shown = 0;
    cards.forEach(function (card) {
      var ok = (!b || card.dataset.benchmark === b) && (!c || card.dataset.cell === c) &&
               (!k || card.dataset.kind === k);
      card.hidden = !ok;
      if (ok) { shown += 1; }
    });
    if (count) { count.textContent = "showing " + shown + " of " + cards.length; }
  }
  function benchChanged() {
    var b = value(bench);
    if (cell) {
      Array.prototype.forEach.call(cell.querySelectorAll("optgroup"), function (group) {
        group.hidden = !!b && group.dataset.benchmark !== b;
      });
      var selected = cell.options[cell.selectedIndex];
      if (b && selected && selected.value && selected.parentNode.dataset.benchmark !== b) {
        cell.value = "";
      }
    }
    apply();
  }
  if (bench) { bench.addEventListener("change", benchChanged); }
  if (cell) { cell.addEventListener("change", apply); }
  if (kind) { kind.addEventListener("change", apply); }
  benchChanged();
  document.body.dataset.ready = "1";
})();
