/**
 * The stored-run page's inline style and script. Constants, so no run data ever reaches the
 * script's text: the page's data is escaped HTML, and the script only shows and hides it.
 */

export const PAGE_CSS = `
:root { color-scheme: light; --line: #b8b8b8; --now: #e8590c; --now-bg: #ffe066; --active-bg: #fff9db; --muted: #666; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; padding: 1rem 1.25rem 3rem; color: #111; background: #fafafa; }
h1 { font-size: 1.35rem; margin: 0 0 .5rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; }
code, .event, .target, .states-list { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
.summary { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0; }
.summary dt, .detail dt { color: var(--muted); }
.summary dd, .detail dd { margin: 0; }
.top { display: grid; grid-template-columns: minmax(18rem, 1fr) minmax(18rem, 1fr); gap: 1rem; align-items: start; }
@media (max-width: 900px) { .top { grid-template-columns: 1fr; } }
.panel { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: .75rem 1rem; }
#details { position: sticky; top: .5rem; }
.detail dl { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: .25rem 0 0; }
.timeline { list-style: none; margin: 0; padding: 0; }
.timeline > li { border-left: 3px solid var(--line); padding: .2rem 0 .4rem .75rem; margin-left: .25rem; }
.timeline > li.now { border-left-color: var(--now); }
.timeline .calls { display: flex; flex-wrap: wrap; gap: .3rem; margin-top: .25rem; }
button { font: inherit; cursor: pointer; border: 1px solid var(--line); border-radius: 6px; background: #f3f3f3; padding: .1rem .5rem; }
button[aria-pressed="true"] { outline: 2px solid var(--now); background: var(--active-bg); }
.tag { display: inline-block; border-radius: 4px; padding: 0 .3rem; margin-left: .3rem; font-size: 11.5px; background: #eee; color: #333; }
.tag.open { background: var(--now-bg); }
.tag.error { background: #ffc9c9; }
.legend { color: var(--muted); margin: .25rem 0 .5rem; }
.legend .swatch { display: inline-block; width: .9rem; height: .9rem; vertical-align: -2px; border-radius: 3px; margin: 0 .25rem 0 .75rem; border: 1px solid var(--line); }
.legend .swatch.now { background: var(--now-bg); border: 2px solid var(--now); }
.legend .swatch.active { background: var(--active-bg); border-color: var(--now); }
.chart { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: .5rem .75rem .75rem; margin-top: 1rem; }
.chart.selected { outline: 3px solid var(--now); }
.chart h2 { margin-top: .25rem; }
.states { display: flex; flex-wrap: wrap; gap: .5rem; align-items: flex-start; margin-top: .35rem; }
.state { border: 1px solid var(--line); border-radius: 7px; padding: .3rem .5rem .4rem; background: #fff; min-width: 11rem; max-width: 26rem; }
.state.compound, .state.parallel { max-width: none; flex: 1 1 100%; background: #fcfcfc; }
.state.final { border-style: double; border-width: 4px; }
.states.regions > .state { flex: 1 1 20rem; border-style: dashed; }
.state[data-active="true"] { background: var(--active-bg); border-color: var(--now); }
.state[data-current="true"] { background: var(--now-bg); border: 3px solid var(--now); }
.state:target { box-shadow: 0 0 0 3px #339af0; }
.name { font-weight: 600; }
.badge { font-weight: 400; font-size: 11px; border: 1px solid var(--line); border-radius: 4px; padding: 0 .25rem; margin-left: .35rem; color: var(--muted); }
.badge.now { border-color: var(--now); color: #000; background: #fff; font-weight: 600; }
.notes, .transitions { list-style: none; margin: .15rem 0 0; padding: 0; }
.notes li { color: var(--muted); font-size: 12.5px; }
.transitions li { font-size: 12.5px; }
.target { color: #1864ab; }
.any-state { border: 1px dotted var(--line); border-radius: 7px; padding: .3rem .5rem; }
.empty { color: var(--muted); }
.diagram { overflow: auto; max-height: 85vh; border: 1px solid #e6e6e6; border-radius: 6px; background: #fff; margin: .25rem 0 .5rem; }
.diagram-svg { display: block; font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace; }
.diagram-svg .box { fill: #fff; stroke: #8a8a8a; stroke-width: 1.2; }
.diagram-svg .node.compound > .box, .diagram-svg .node.parallel > .box { fill: #f7f7f7; }
.diagram-svg .node.final > .inner { fill: none; stroke: #8a8a8a; stroke-width: 1; }
.diagram-svg .node[data-mark="active"] > .box { fill: var(--active-bg); stroke: var(--now); stroke-width: 1.5; }
.diagram-svg .node[data-mark="current"] > .box { fill: var(--now-bg); stroke: var(--now); stroke-width: 3; }
.diagram-svg .name { font-weight: 600; fill: #111; }
.diagram-svg .note { fill: var(--muted); }
.diagram-svg .now { fill: var(--now); font-weight: 700; }
.diagram-svg .edge path, .diagram-svg .initial path { fill: none; stroke: #5c5c5c; stroke-width: 1.1; }
.diagram-svg .edge .head, .diagram-svg .initial .head, .diagram-svg .initial circle { fill: #5c5c5c; }
.diagram-svg .edge[data-internal="true"] path { stroke-dasharray: 4 3; }
.diagram-svg .label-bg { fill: #fff; fill-opacity: .85; }
.diagram-svg .label { fill: #1c3d5a; }
.diagram-svg .edge:hover path { stroke: #1864ab; stroke-width: 2.2; }
.diagram-svg .edge:hover .head { fill: #1864ab; }
.diagram-svg .edge:hover .label { font-weight: 700; }
.as-text { font-size: .95rem; color: var(--muted); margin: .75rem 0 .25rem; }
`;

/**
 * Clicking a step, a call or the run's present shows its details (pre-rendered, hidden) and,
 * for a call with a chart, marks that chart and scrolls to it; each diagram opens scrolled to
 * the state marked "now". Without the script every detail
 * still reads as text in the page's source order; the page works without it, only less handily.
 */
export const PAGE_SCRIPT = `
(function () {
  function show(button) {
    var id = button.getAttribute('data-detail');
    var details = document.querySelectorAll('.detail');
    for (var i = 0; i < details.length; i++) details[i].hidden = details[i].id !== id;
    var buttons = document.querySelectorAll('[data-detail]');
    for (var j = 0; j < buttons.length; j++) buttons[j].setAttribute('aria-pressed', String(buttons[j].getAttribute('data-detail') === id));
    var target = button.getAttribute('data-chart-target');
    var charts = document.querySelectorAll('.chart[data-chart="call"]');
    for (var k = 0; k < charts.length; k++) charts[k].classList.toggle('selected', charts[k].id === target);
    var chart = target ? document.getElementById(target) : null;
    if (chart) chart.scrollIntoView({ block: 'nearest' });
  }
  document.addEventListener('click', function (event) {
    var button = event.target && event.target.closest ? event.target.closest('[data-detail]') : null;
    if (button) show(button);
  });
  // A diagram wider or taller than its box opens scrolled to the state marked "now" (the page itself does not move).
  var diagrams = document.querySelectorAll('.diagram');
  for (var d = 0; d < diagrams.length; d++) {
    var box = diagrams[d].querySelector('[data-mark="current"] > rect.box');
    if (!box) continue;
    var x = Number(box.getAttribute('x')) + Number(box.getAttribute('width')) / 2;
    var y = Number(box.getAttribute('y')) + Number(box.getAttribute('height')) / 2;
    diagrams[d].scrollLeft = Math.max(0, x - diagrams[d].clientWidth / 2);
    diagrams[d].scrollTop = Math.max(0, y - diagrams[d].clientHeight / 2);
  }
})();
`;
