import { STYLE } from "./style";

/**
 * The inspector as one HTML file: the page script inline and, if given, the payload as base64;
 * without a payload the page offers a file picker and drag and drop.
 */
export function inspectorHtml(script: string, payload?: { base64: string; name: string }): string {
  // Inside <script>, only "</script" could end it early; "<\/" means the same in JavaScript.
  const inline = script.replace(/<\/(script)/gi, "<\\/$1");
  const data = payload
    ? `<script type="application/octet-stream" id="payload" data-name="${escapeAttribute(payload.name)}">${payload.base64}</script>`
    : "";
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
<label class="open">Open a payload <input type="file" id="picker"></label>
</header>
<main id="report"></main>
<p class="drop">Drop a colocated.v1 payload (.bin) here, or choose one above. Nothing leaves this page.</p>
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
