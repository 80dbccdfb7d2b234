import { STYLE } from "./style";

/**
 * The inspector as one HTML file: the page script inline and, if given, the payload as base64
 * (two: the page shows their diff); without a payload the page offers file pickers and drag
 * and drop.
 */
export function inspectorHtml(
  script: string,
  payloads: readonly { base64: string; name: string }[] = [],
): string {
  // Inside <script>, only "</script" could end it early; "<\/" means the same in JavaScript.
  const inline = script.replace(/<\/(script)/gi, "<\\/$1");
  const data = payloads
    .slice(0, 2)
    .map(
      (payload, i) =>
        `<script type="application/octet-stream" id="${i === 0 ? "payload" : "payload-b"}" data-name="${escapeAttribute(payload.name)}">${payload.base64}</script>`,
    )
    .join("\n");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>colocated-wire inspector</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>colocated-wire payload inspector</h1>
<label class="open">Open a payload (or two, to compare) <input type="file" id="picker" multiple></label>
<label class="open">Compare with <input type="file" id="picker-b"></label>
</header>
<main id="report"></main>
<p class="drop">Drop a colocated.v1 payload (.bin) here, or two to see how they differ, or choose them above. Nothing leaves this page.</p>
<noscript>The inspector needs JavaScript.</noscript>
${data}
<script>${inline}</script>
</body>
</html>
`;
}

function escapeAttribute(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
