// Builds fax-app.html, the MCP App faxhub embeds (protocols/mcp/app.go):
// src/app.js bundled with @modelcontextprotocol/ext-apps (pinned in
// conformance/package.json) and src/app.css, inlined into src/index.html,
// so the page loads nothing from any origin. Deterministic: the browser
// suite rebuilds it and fails if the committed file differs.
//
//   node protocols/mcp/app/build.mjs            write fax-app.html
//   node protocols/mcp/app/build.mjs --stdout   print it instead
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = dirname(fileURLToPath(import.meta.url));
const modules = join(here, "../../../conformance/node_modules");
const esbuild = createRequire(join(modules, "x.js"))("esbuild");

export async function build() {
  const out = await esbuild.build({
    entryPoints: [join(here, "src/app.js")],
    bundle: true, write: false, minify: true, format: "iife", target: "es2020",
    platform: "browser", nodePaths: [modules], legalComments: "eof", charset: "utf8",
    logLevel: "error",
  });
  // "</script" cannot appear inside an inline script; in the strings and
  // patterns where the bundle may hold it, "<\/script" means the same.
  const js = out.outputFiles[0].text.replaceAll("</script", "<\\/script");
  const css = readFileSync(join(here, "src/app.css"), "utf8");
  const html = readFileSync(join(here, "src/index.html"), "utf8");
  return html.replace("/*STYLE*/", () => css).replace("/*SCRIPT*/", () => js);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const page = await build();
  if (process.argv.includes("--stdout")) process.stdout.write(page);
  else writeFileSync(join(here, "fax-app.html"), page);
}
