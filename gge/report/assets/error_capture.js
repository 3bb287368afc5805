// Records the page's uncaught errors and unhandled rejections in document.body.dataset.jsErrors,
// one per line (the browser test reads it). Runs first, before any other script of the page.
(function () {
  var errors = [];
  function record(message) {
    errors.push(String(message));
    if (document.body) { document.body.dataset.jsErrors = errors.join("\n"); }
  }
  window.onerror = function (message, source, line, column) {
    record(message + " (" + line + ":" + column + ")");
    return false;
  };
  window.addEventListener("unhandledrejection", function (event) {
    record("unhandled rejection: " + event.reason);
  });
})();
