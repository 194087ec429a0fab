// lcg ui: keeps the health figures of the page current. It asks /health.json (same origin,
// the cookie goes with it) every 2 s while the backlog of extraction or vectors is moving, else
// every 10 s (a backlog that stands still, such as extraction with no model, is not work
// running), and writes each figure into the element that shows it.
(function () {
  "use strict";
  var FAST = 2000;
  var SLOW = 10000;

  function text(id, value) {
    var node = document.getElementById(id);
    if (node && value !== undefined && value !== null) {
      node.textContent = String(value);
    }
  }

  function apply(data) {
    var state = document.getElementById("state");
    if (state) {
      state.textContent = data.state;
      state.className = "state " + data.state;
    }
    text("embedder", data.embedder);
    text("backlog", Number(data.backlog).toLocaleString("en"));
    var cells = document.querySelectorAll("td[data-cell]");
    for (var i = 0; i < cells.length; i++) {
      var key = cells[i].getAttribute("data-cell");
      if (Object.prototype.hasOwnProperty.call(data.cells, key)) {
        cells[i].textContent = data.cells[key];
      }
    }
  }

  function poll(delay, last) {
    window.setTimeout(function () {
      fetch("/health.json", { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (data) {
          if (data) { apply(data); }
          var moving = data && data.backlog > 0 && data.backlog !== last;
          poll(moving ? FAST : SLOW, data ? data.backlog : last);
        })
        .catch(function () { poll(SLOW, last); });
    }, delay);
  }

  var backlog = document.getElementById("backlog");
  var shown = backlog ? Number(backlog.textContent.replace(/[^0-9]/g, "")) : 0;
  poll(shown > 0 ? FAST : SLOW, shown);
})();
