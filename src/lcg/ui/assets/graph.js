// lcg ui: draws an entity's neighbourhood. The graph comes as JSON in the page
// (<script type="application/json" id="graph-data">); a small force layout places the nodes
// (near pairs repel, edges pull, everything drifts to the middle), then the graph is written into
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
    // Fruchterman-Reingold: pairs closer than 4k push apart (k*k/d), linked nodes pull
    // together (d*d/k), a weak pull to the middle keeps loose parts in view; each step moves
    // a node at most the temperature, which cools to nothing. Positions live in typed arrays
    // while it runs (the pair loop is most of the page's script time: reading them from the
    // node objects cost several times as much) and are written to the nodes at the end.
    var n = nodes.length;
    var index = {};
    var i, j, m;
    var xs = new Float64Array(n);
    var ys = new Float64Array(n);
    var fixed = new Uint8Array(n);
    for (i = 0; i < n; i++) {
      index[nodes[i].uuid] = i;
      var angle = (2 * Math.PI * i) / Math.max(1, n) * 7.3;
      var radius = nodes[i].hop === 0 ? 0 : 60 * nodes[i].hop + (i % 5) * 8;
      xs[i] = W / 2 + radius * Math.cos(angle);
      ys[i] = H / 2 + radius * Math.sin(angle);
      fixed[i] = nodes[i].hop === 0 ? 1 : 0;
    }
    var ends = [];
    for (m = 0; m < edges.length; m++) {
      var a = index[edges[m].source];
      var b = index[edges[m].target];
      if (a !== undefined && b !== undefined && a !== b) { ends.push(a, b); }
    }
    var links = new Int32Array(ends);
    // A second-hop node starts beyond the first-hop node it hangs from, so each cluster
    // starts where it ends up and the layout needs fewer steps to untangle.
    var placed = new Uint8Array(n);
    for (m = 0; m < links.length; m += 2) {
      var u = links[m];
      var v = links[m + 1];
      if (nodes[u].hop === 2 && nodes[v].hop === 1) { var t = u; u = v; v = t; }
      if (nodes[u].hop !== 1 || nodes[v].hop !== 2 || placed[v]) { continue; }
      placed[v] = 1;
      var spin = (v % 7) * 0.9;
      xs[v] = xs[u] + (xs[u] - W / 2) * 0.6 + 24 * Math.cos(spin);
      ys[v] = ys[u] + (ys[u] - H / 2) * 0.6 + 24 * Math.sin(spin);
    }
    var k = Math.max(30, Math.min(110, 0.7 * Math.sqrt((W * H) / Math.max(1, n))));
    var kk = k * k;
    var reach = 4 * k;
    // 160 steps (260 before the second hop started by its parent): the same picture, 40% less work.
    var steps = 160;
    var dx = new Float64Array(n);
    var dy = new Float64Array(n);
    for (var step = 0; step < steps; step++) {
      var temp = (W / 10) * (1 - step / steps) + 0.5;
      dx.fill(0);
      dy.fill(0);
      for (i = 0; i < n; i++) {
        var xi = xs[i];
        var yi = ys[i];
        var fx = 0;
        var fy = 0;
        for (j = i + 1; j < n; j++) {
          var ex = xi - xs[j];
          var ey = yi - ys[j];
          if (ex > reach || ex < -reach || ey > reach || ey < -reach) { continue; }
          var d = Math.sqrt(ex * ex + ey * ey) + 0.01;
          if (d > reach) { continue; }
          var push = kk / (d * d);
          fx += ex * push; fy += ey * push;
          dx[j] -= ex * push; dy[j] -= ey * push;
        }
        dx[i] += fx; dy[i] += fy;
      }
      for (m = 0; m < links.length; m += 2) {
        var p = links[m];
        var q = links[m + 1];
        var lx = xs[q] - xs[p];
        var ly = ys[q] - ys[p];
        var pull = (Math.sqrt(lx * lx + ly * ly) + 0.01) / k;
        dx[p] += lx * pull; dy[p] += ly * pull;
        dx[q] -= lx * pull; dy[q] -= ly * pull;
      }
      for (i = 0; i < n; i++) {
        if (fixed[i]) { continue; }
        dx[i] += (W / 2 - xs[i]) * 0.02;
        dy[i] += (H / 2 - ys[i]) * 0.02;
        var len = Math.sqrt(dx[i] * dx[i] + dy[i] * dy[i]) + 0.01;
        var scale = Math.min(len, temp) / len;
        xs[i] = Math.max(16, Math.min(W - 16, xs[i] + dx[i] * scale));
        ys[i] = Math.max(16, Math.min(H - 16, ys[i] + dy[i] * scale));
      }
    }
    for (i = 0; i < n; i++) {
      nodes[i].x = xs[i];
      nodes[i].y = ys[i];
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
    var degree = {};
    for (var d = 0; d < data.edges.length; d++) {
      degree[data.edges[d].source] = (degree[data.edges[d].source] || 0) + 1;
      degree[data.edges[d].target] = (degree[data.edges[d].target] || 0) + 1;
    }
    var group = make("g", { "class": "nodes" }, svg);
    for (var i = 0; i < nodes.length; i++) {
      var node = nodes[i];
      var g = make("g", { "class": "node" + (node.hop === 0 ? " centre" : ""),
        "data-uuid": node.uuid, transform: "translate(" + node.x + "," + node.y + ")" }, group);
      var link = make("a", { href: "/entity/" + encodeURIComponent(node.uuid) + "?group=" +
        encodeURIComponent(data.group) }, g);
      make("circle", { r: node.hop === 0 ? 10 : 6 }, link);
      // Many nodes: only the centre's and the well-linked ones' names are written (every
      // name shows on hover).
      if (nodes.length <= 60 || node.hop === 0 || (degree[node.uuid] || 0) >= 3) {
        var label = make("text", { x: 9, y: 4 }, link);
        label.textContent = node.name.length > 40 ? node.name.slice(0, 39) + "…" : node.name;
      }
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
