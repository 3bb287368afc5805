// The compare page has nothing to set up: it only marks itself loaded (document.body.dataset.ready).
(function () { document.body.dataset.ready = "1"; })();
