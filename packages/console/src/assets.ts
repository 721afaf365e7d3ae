/** The console's stylesheet and its one script (progressive enhancement: every page works without it). */
export const CSS = `
:root { --fg:#14171f; --muted:#4b5262; --bg:#fff; --line:#d6dae3; --accent:#1f4fd1; --ok:#166534; --bad:#a11a1a; --warn:#8a4b00; --soft:#f3f5f9; }
* { box-sizing: border-box; }
body { margin:0; font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color:var(--fg); background:var(--bg); }
a { color:var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible { outline:3px solid #f5a300; outline-offset:2px; }
header.top { display:flex; flex-wrap:wrap; gap:.5rem 1.5rem; align-items:center; padding:.75rem 1rem; border-bottom:1px solid var(--line); }
header.top .brand { font-weight:700; text-decoration:none; color:var(--fg); }
nav ul { display:flex; flex-wrap:wrap; gap:.25rem 1rem; list-style:none; margin:0; padding:0; }
nav a[aria-current="page"] { font-weight:700; text-decoration:none; color:var(--fg); }
main { padding:1rem; max-width:72rem; margin:0 auto; }
h1 { font-size:1.5rem; margin:.25rem 0 1rem; }
h2 { font-size:1.15rem; margin:1.5rem 0 .5rem; }
.cards { display:grid; grid-template-columns:repeat(auto-fit,minmax(10rem,1fr)); gap:.75rem; }
.card { border:1px solid var(--line); border-radius:.5rem; padding:.75rem; background:var(--soft); }
.card .label { color:var(--muted); font-size:.85rem; }
.card .value { font-size:1.3rem; font-weight:600; font-variant-numeric:tabular-nums; }
table { border-collapse:collapse; width:100%; font-variant-numeric:tabular-nums; }
th, td { text-align:left; padding:.45rem .5rem; border-bottom:1px solid var(--line); vertical-align:top; }
th { font-size:.85rem; color:var(--muted); font-weight:600; }
td.num, th.num { text-align:right; }
.table-wrap { overflow-x:auto; }
.status { font-weight:600; }
.status-completed { color:var(--ok); } .status-failed, .status-reversed { color:var(--bad); } .status-pending, .status-processing { color:var(--warn); }
form.inline { display:inline; }
.filters { display:flex; flex-wrap:wrap; gap:.75rem; align-items:flex-end; margin-bottom:1rem; }
.filters label, .field label { display:block; font-size:.85rem; color:var(--muted); }
input, select, button { font:inherit; }
input[type=text], input[type=password], input[type=datetime-local], input[type=number], select { padding:.4rem .5rem; border:1px solid #8a91a1; border-radius:.35rem; min-width:10rem; max-width:100%; }
button, .button { display:inline-block; padding:.45rem .9rem; border-radius:.35rem; border:1px solid var(--accent); background:var(--accent); color:#fff; cursor:pointer; text-decoration:none; }
button.secondary { background:#fff; color:var(--accent); }
button.danger { background:var(--bad); border-color:var(--bad); }
.notice { padding:.75rem; border-radius:.5rem; border:1px solid var(--line); background:var(--soft); margin:1rem 0; }
.notice.warn { border-color:#e0b36a; background:#fff6e6; }
.notice.error { border-color:#e3a0a0; background:#fdecec; }
.address { font-family: ui-monospace, Menlo, Consolas, monospace; word-break:break-all; }
.qr svg { width:10rem; height:10rem; }
.deposit { display:flex; flex-wrap:wrap; gap:1rem; align-items:center; }
figure { margin:0; }
.chart svg { width:100%; height:auto; max-height:14rem; }
svg.spend-bars, svg.spend-days { width:100%; height:auto; max-height:18rem; margin:.25rem 0 .5rem; }
.legend { display:flex; gap:1rem; flex-wrap:wrap; font-size:.85rem; }
.swatch { display:inline-block; width:.8rem; height:.8rem; margin-right:.3rem; vertical-align:middle; }
.pager { display:flex; gap:1rem; margin-top:1rem; }
.signin { max-width:28rem; margin:3rem auto; }
.signin .field { margin-bottom:1rem; }
.signin input { width:100%; }
.muted { color:var(--muted); }
dl.facts { display:grid; grid-template-columns:max-content 1fr; gap:.35rem 1rem; }
dl.facts dt { color:var(--muted); }
dl.facts dd { margin:0; word-break:break-word; }
pre.address { white-space:pre-wrap; }
pre.snippet { background:var(--soft); border:1px solid var(--line); padding:.75rem; overflow-x:auto; }
fieldset { border:1px solid var(--line); border-radius:.5rem; margin:0 0 1rem; padding:.5rem .75rem .75rem; }
legend { font-weight:600; padding:0 .25rem; }
.grid { display:grid; grid-template-columns:repeat(auto-fit,minmax(9rem,1fr)); gap:.5rem .75rem; }
.grid input { min-width:0; width:100%; }
.field { margin-bottom:.5rem; }
label.check { display:inline-flex; gap:.35rem; align-items:center; margin:.25rem 1rem .25rem 0; }
textarea { font:inherit; width:100%; max-width:36rem; padding:.4rem .5rem; border:1px solid #8a91a1; border-radius:.35rem; }
.hint { font-size:.85rem; margin:.2rem 0 0; }
ol.history, ul.refusals { padding-left:1.25rem; } ol.history li, ul.refusals li { margin-bottom:.35rem; word-break:break-word; }
ul.windows { list-style:none; margin:0; padding:0; }
ul.windows li { margin-bottom:.4rem; }
ul.token-tree { list-style:none; margin:0; padding:0; }
ul.token-tree ul.token-tree { margin-left:.5rem; padding-left:.75rem; border-left:3px solid var(--line); }
.token-node { border-bottom:1px solid var(--line); padding:.5rem 0; }
.token-node p { margin:.2rem 0; word-break:break-word; }
.token-head .state { font-size:.85rem; color:var(--muted); }
a.button.danger { background:var(--bad); border-color:var(--bad); }
.button.small { padding:.2rem .6rem; font-size:.85rem; margin-left:.5rem; }
meter { display:block; width:100%; max-width:16rem; }
.stack > button { margin-top:.5rem; }
.actions { display:flex; flex-wrap:wrap; gap:.5rem; }
.small { font-size:.85rem; }
table.txlist td { word-break:break-word; }
button.copy { padding:.1rem .45rem; font-size:.8rem; }
.visually-hidden { position:absolute; width:1px; height:1px; overflow:hidden; clip:rect(0 0 0 0); white-space:nowrap; }
@media (max-width: 40rem) { main { padding:.75rem; } th, td { padding:.35rem .3rem; } .hide-narrow { display:none; }
  table.cards-narrow thead { position:absolute; width:1px; height:1px; overflow:hidden; clip:rect(0 0 0 0); }
  table.cards-narrow tr { display:block; border-bottom:1px solid var(--line); padding:.4rem 0; }
  table.cards-narrow td { display:block; border:0; padding:.15rem 0; }
  table.cards-narrow td[data-label]::before { content:attr(data-label) ": "; color:var(--muted); font-size:.85rem; }
  table.cards-narrow td.hide-narrow { display:none; } table.cards-narrow tbody th { display:block; border:0; padding:.15rem 0; } }
`;

/**
 * Live values: elements with `data-live="<json path>"` inside `[data-live-src=URL]` are refreshed from that
 * console URL every 2 s (the balance as a deposit arrives); `[data-copy]` buttons copy the text of the element
 * they name; `<time data-local>` is shown in the viewer's time zone. The session's CSRF token rides in a header on every request the script makes.
 */
export const JS = `
(function () {
  var csrf = document.querySelector('meta[name="csrf-token"]');
  var token = csrf ? csrf.getAttribute('content') : '';
  document.querySelectorAll('[data-live-src]').forEach(function (box) {
    var url = box.getAttribute('data-live-src');
    var stop = false;
    function tick() {
      if (stop) return;
      fetch(url, { credentials: 'same-origin', headers: { 'x-csrf-token': token, accept: 'application/json' } })
        .then(function (r) { if (!r.ok) { stop = r.status === 401; throw new Error(String(r.status)); } return r.json(); })
        .then(function (data) {
          box.querySelectorAll('[data-live]').forEach(function (el) {
            var v = data[el.getAttribute('data-live')];
            if (v !== undefined && el.textContent !== String(v)) el.textContent = String(v);
          });
        })
        .catch(function () {})
        .then(function () { setTimeout(tick, 2000); });
    }
    setTimeout(tick, 2000);
  });
  // Times: written in UTC (title keeps it on hover), shown in the viewer's time zone.
  document.querySelectorAll('time[data-local]').forEach(function (el) {
    var d = new Date(el.getAttribute('datetime'));
    if (isNaN(d.getTime())) return;
    el.textContent = d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short' });
  });
  document.querySelectorAll('[data-copy]').forEach(function (btn) {
    btn.hidden = false;
    btn.addEventListener('click', function () {
      var el = document.getElementById(btn.getAttribute('data-copy'));
      if (!el || !navigator.clipboard) return;
      navigator.clipboard.writeText(el.textContent.trim()).then(function () {
        var old = btn.textContent; btn.textContent = 'Copied'; setTimeout(function () { btn.textContent = old; }, 1500);
      });
    });
  });
})();
`;
