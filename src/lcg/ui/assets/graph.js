// lcg ui: draws an entity's neighbourhood. The graph comes as JSON in the page
// (<script type="application/json" id="graph-data">); a small force layout places the nodes
// (pairs repel, edges pull, everything drifts to the middle), then the graph is written into
// #graph as SVG: each node a link to its own entity page, the centre marked.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var W = 900;
  var H = 560;

  function make(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    for (var key in attrs) {
      if (Object.prototype.hasOwnProperty.call(attrs, key)) {
        node.setAttribute(key, String(attrs[key]));
      }
    }
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function layout(nodes, edges) {
    var n = nodes.length;
    var index = {};
    var i, j, k;
    for (i = 0; i < n; i++) {
      index[nodes[i].uuid] = i;
      var angle = (2 * Math.PI * i) / Math.max(1, n);
      var radius = nodes[i].hop === 0 ? 0 : 80 * nodes[i].hop + (i % 7) * 6;
      nodes[i].x = W / 2 + radius * Math.cos(angle);
      nodes[i].y = H / 2 + radius * Math.sin(angle);
    }
    var links = [];
    for (k = 0; k < edges.length; k++) {
      var a = index[edges[k].source];
      var b = index[edges[k].target];
      if (a !== undefined && b !== undefined && a !== b) { links.push([a, b]); }
    }
    var ideal = Math.max(40, Math.min(110, 600 / Math.sqrt(n + 1)));
    var steps = n > 120 ? 180 : 300;
    for (var step = 0; step < steps; step++) {
      var heat = 1 - step / steps;
      var dx = new Float64Array(n);
      var dy = new Float64Array(n);
      for (i = 0; i < n; i++) {
        for (j = i + 1; j < n; j++) {
          var ex = nodes[i].x - nodes[j].x;
          var ey = nodes[i].y - nodes[j].y;
          var d2 = ex * ex + ey * ey + 0.01;
          var push = (ideal * ideal) / d2;
          dx[i] += ex * push; dy[i] += ey * push;
          dx[j] -= ex * push; dy[j] -= ey * push;
        }
      }
      for (k = 0; k < links.length; k++) {
        var p = links[k][0];
        var q = links[k][1];
        var lx = nodes[q].x - nodes[p].x;
        var ly = nodes[q].y - nodes[p].y;
        var dist = Math.sqrt(lx * lx + ly * ly) + 0.01;
        var pull = (dist - ideal) / dist * 0.5;
        dx[p] += lx * pull; dy[p] += ly * pull;
        dx[q] -= lx * pull; dy[q] -= ly * pull;
      }
      for (i = 0; i < n; i++) {
        if (nodes[i].hop === 0) { continue; }
        dx[i] += (W / 2 - nodes[i].x) * 0.02;
        dy[i] += (H / 2 - nodes[i].y) * 0.02;
        var len = Math.sqrt(dx[i] * dx[i] + dy[i] * dy[i]) + 0.01;
        var cap = 12 * heat + 0.5;
        var scale = Math.min(len, cap) / len;
        nodes[i].x = Math.max(20, Math.min(W - 20, nodes[i].x + dx[i] * scale));
        nodes[i].y = Math.max(20, Math.min(H - 20, nodes[i].y + dy[i] * scale));
      }
    }
    return index;
  }

  function draw(data, holder) {
    var nodes = data.nodes;
    var index = layout(nodes, data.edges);
    var svg = make("svg", { viewBox: "0 0 " + W + " " + H, width: "100%", role: "img",
      "aria-label": "neighbourhood graph" }, null);
    var lines = make("g", { "class": "edges" }, svg);
    for (var k = 0; k < data.edges.length; k++) {
      var e = data.edges[k];
      var a = nodes[index[e.source]];
      var b = nodes[index[e.target]];
      if (!a || !b) { continue; }
      var line = make("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y,
        "class": "edge" + (e.ended ? " ended" : "") }, lines);
      make("title", {}, line).textContent = e.fact || e.relation;
    }
    var group = make("g", { "class": "nodes" }, svg);
    for (var i = 0; i < nodes.length; i++) {
      var node = nodes[i];
      var g = make("g", { "class": "node" + (node.hop === 0 ? " centre" : ""),
        "data-uuid": node.uuid, transform: "translate(" + node.x + "," + node.y + ")" }, group);
      var link = make("a", { href: "/entity/" + encodeURIComponent(node.uuid) + "?group=" +
        encodeURIComponent(data.group) }, g);
      make("circle", { r: node.hop === 0 ? 10 : 6 }, link);
      var label = make("text", { x: 9, y: 4 }, link);
      label.textContent = node.name.length > 40 ? node.name.slice(0, 39) + "…" : node.name;
      make("title", {}, link).textContent = node.name +
        (node.labels.length ? " [" + node.labels.join(", ") + "]" : "");
    }
    holder.appendChild(svg);
  }

  var source = document.getElementById("graph-data");
  var holder = document.getElementById("graph");
  if (source && holder) {
    draw(JSON.parse(source.textContent), holder);
  }
})();
