
(function () {
  'use strict';
  try { main(); } catch (err) {
    document.body.setAttribute('data-js-error', String(err && err.message || err));
    console.error('planner report: ' + err);
  }
  function main() {
  var tip = document.getElementById('tip');
  function show(e) {
    var el = e.target.closest ? e.target.closest('[data-tip]') : null;
    if (!el) { tip.style.display = 'none'; return; }
    tip.textContent = el.getAttribute('data-tip');
    tip.style.display = 'block';
    var x = e.clientX + 14, y = e.clientY + 12;
    if (x + tip.offsetWidth > window.innerWidth) { x = e.clientX - tip.offsetWidth - 10; }
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  }
  document.addEventListener('mousemove', show);
  document.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
  Array.prototype.forEach.call(document.querySelectorAll('.legend [data-series]'),
    function (item) {
      item.addEventListener('click', function () {
        var fig = item.closest('figure'), s = item.getAttribute('data-series');
        item.classList.toggle('off');
        Array.prototype.forEach.call(fig.querySelectorAll('svg [data-series]'), function (el) {
          if (el.getAttribute('data-series') === s) { el.classList.toggle('hidden'); }
        });
      });
    });
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (t) {
    Array.prototype.forEach.call(t.querySelectorAll('th'), function (th, col) {
      th.addEventListener('click', function () {
        var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        var dir = th.getAttribute('data-dir') === 'asc' ? -1 : 1;
        th.setAttribute('data-dir', dir === 1 ? 'asc' : 'desc');
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute('data-v'), y = b.cells[col].getAttribute('data-v');
          var nx = parseFloat(x), ny = parseFloat(y);
          if (!isNaN(nx) && !isNaN(ny)) { return (nx - ny) * dir; }
          return String(x).localeCompare(String(y)) * dir;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  var count = function (sel) { return document.querySelectorAll(sel).length; };
  var b = document.body;
  b.setAttribute('data-charts', count('svg.chart'));
  b.setAttribute('data-points', count('svg.chart .pt'));
  b.setAttribute('data-ops', count('svg.chart .op'));
  b.setAttribute('data-bins', count('svg.chart .bin'));
  b.setAttribute('data-transfers', count('svg.chart .xfer'));
  // where each chart is on the page, for screenshot checks
  var boxes = Array.prototype.map.call(document.querySelectorAll('svg.chart'), function (c) {
    var r = c.getBoundingClientRect();
    return [c.getAttribute('data-chart'), Math.round(r.left + window.scrollX),
            Math.round(r.top + window.scrollY), Math.round(r.width),
            Math.round(r.height)].join(':');
  });
  b.setAttribute('data-boxes', boxes.join(' '));
  b.setAttribute('data-height', Math.ceil(document.documentElement.scrollHeight));
  b.setAttribute('data-ready', '1');
  }
})();
