/** The inspector page's stylesheet, print included. */
export const STYLE = `
:root { --cell: 28px; color-scheme: light; font: 14px/1.45 system-ui, sans-serif; color: #1b1f24; }
body { margin: 0 auto; max-width: 1200px; padding: 1rem 1.5rem 3rem; }
body.dropping { outline: 4px dashed #3a6ea5; outline-offset: -8px; }
header { display: flex; flex-wrap: wrap; gap: .5rem 1.5rem; align-items: baseline; border-bottom: 1px solid #ccd; }
h1 { font-size: 1.3rem; margin: .5rem 0; }
h2 { font-size: 1.1rem; margin: 1.6rem 0 .5rem; }
.open { color: #444; }
.drop { margin: 2rem 0; padding: 2rem; border: 2px dashed #99a; border-radius: 8px; text-align: center; color: #555; }
#report:not(:empty) + .drop { display: none; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: .1rem 1rem; margin: 1rem 0; }
dl.facts dt { color: #555; } dl.facts dd { margin: 0; font-weight: 600; }
#error { border-left: 5px solid #b3261e; background: #fdf0ef; padding: .2rem 1rem; }
#error h2 { color: #b3261e; margin-top: .6rem; }
.bar { display: flex; height: 26px; border-radius: 4px; overflow: hidden; border: 1px solid #99a; }
.seg { min-width: 2px; }
.seg-header { background: #9aa5b1; } .seg-table { background: #3a6ea5; } .seg-tree { background: #5fa55a; }
.seg-leaves { background: #e3a21a; } .seg-function { background: #b5489b; } .seg-other { background: #ccc; }
figure { margin: .5rem 0; }
figcaption { font-size: .85rem; color: #444; }
figcaption .legend-item { margin-right: 1.2rem; white-space: nowrap; }
figcaption i, .swatch { display: inline-block; width: .9em; height: .9em; margin-right: .3em; vertical-align: -.1em; border: 1px solid #0003; }
table { border-collapse: collapse; }
th, td { padding: .15rem .7rem; border-bottom: 1px solid #e3e3ea; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
details.sharding { border: 1px solid #ccd; border-radius: 6px; padding: .3rem .7rem; margin: .4rem 0; }
summary { cursor: pointer; }
.grids { display: flex; flex-wrap: wrap; gap: .3rem 1rem; align-items: flex-start; }
.grids > p, .grids > ul { flex-basis: 100%; margin: .3rem 0; }
.grid { display: grid; gap: 1px; background: #fff; }
.cell { height: var(--cell); font-size: 10px; display: flex; align-items: center; justify-content: center; background: #eee; color: #111; overflow: hidden; }
.legend { list-style: none; padding: 0; columns: 2; font-size: .85rem; }
.problem { color: #b3261e; }
.tools { margin: .3rem 0; }
input[type=search] { width: 24rem; max-width: 60%; padding: .2rem .4rem; }
ul.outline, ul.outline ul { list-style: none; padding-left: 1.2rem; margin: 0; }
ul.outline { padding-left: 0; }
button.toggle { background: none; border: 0; padding: .05rem .2rem; font: inherit; cursor: pointer; text-align: left; }
button.toggle::before { content: "▸ "; color: #666; }
button.toggle[aria-expanded="true"]::before { content: "▾ "; }
.key { font-family: ui-monospace, monospace; }
li.leaf { padding-left: 1.1rem; }
.none, .status { color: #666; }
ol.results { font-size: .9rem; }
#diff-summary { font-size: 1.05rem; font-weight: 600; }
#diff-groups code { white-space: pre-wrap; }
#diff-groups li:target { background: #fff3c4; }
.changed { background: #fff3c4; }
li[data-changed="below"] > button.toggle { font-weight: 600; }
a.badge { margin-left: .5rem; padding: 0 .35rem; border-radius: 3px; background: #b3261e; color: #fff; font-size: .8rem; text-decoration: none; }
label.filter { margin-left: 1rem; }
figure.change { border: 1px solid #ccd; border-radius: 6px; padding: .4rem .7rem; margin: .6rem 0; }
figure.change > figcaption { font-size: .95rem; color: #1b1f24; margin-bottom: .3rem; }
.before-after { display: flex; flex-wrap: wrap; gap: 1rem; align-items: flex-start; }
/* Side by side, unless a grid is wider than half: a flex item is no narrower than its content. */
.before-after > .side { flex: 1 1 460px; }
.before-after h4 { margin: .2rem 0; }
:focus-visible { outline: 3px solid #3a6ea5; outline-offset: 1px; }
@media print {
  :root { font-size: 11px; }
  body { max-width: none; padding: 0; }
  .open, .drop, .tools, button.more, li.more { display: none; }
  .changed { outline: 1px solid #b3261e; }
  details.sharding { break-inside: avoid; }
  * { print-color-adjust: exact; -webkit-print-color-adjust: exact; }
  a { color: inherit; text-decoration: none; }
}
`;
