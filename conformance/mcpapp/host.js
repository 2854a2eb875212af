// The test host: a chat app's side of MCP Apps, with
// @modelcontextprotocol/ext-apps' AppBridge. It renders the app's HTML in a
// sandboxed frame (scripts only: an opaque origin, as hosts do) under the
// CSP the resource declares in _meta.ui, and answers the app's tool calls
// through window.hostCallTool, which the test binds to the TypeScript MCP
// client connected to faxhub with the chat app's token (in Node: the page
// never sees the token).
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';

window.openedLinks = [];
window.toolCalls = [];

// cspFor is the policy a host builds from _meta.ui.csp: nothing but the
// inline page, plus the declared domains for connections and images.
function cspFor(csp) {
  const connect = (csp?.connectDomains ?? []).join(' ');
  const res = (csp?.resourceDomains ?? []).join(' ');
  return `default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: ${res}; connect-src ${connect}; base-uri 'none'; form-action 'none'`;
}

window.showApp = async ({ html, meta, toolResult }) => {
  const frame = document.createElement('iframe');
  frame.id = 'app';
  frame.title = 'faxhub app';
  frame.setAttribute('sandbox', 'allow-scripts');
  document.body.appendChild(frame);
  const bridge = new AppBridge(null, { name: 'faxhub-test-host', version: '1.0.0' },
    { openLinks: {}, serverTools: {}, logging: {} }, { hostContext: { theme: 'light', displayMode: 'inline' } });
  bridge.oncalltool = async (params) => {
    window.toolCalls.push(params.name);
    return window.hostCallTool(params);
  };
  bridge.onopenlink = async ({ url }) => { window.openedLinks.push(url); return {}; };
  bridge.onsizechange = ({ height }) => { if (height) frame.style.height = `${Math.ceil(height)}px`; };
  const ready = new Promise((resolve) => { bridge.oninitialized = resolve; });
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  const page = html.replace('<head>', `<head><meta http-equiv="Content-Security-Policy" content="${cspFor(meta?.ui?.csp)}">`);
  frame.srcdoc = page;
  await ready;
  if (toolResult) {
    await bridge.sendToolInput({ arguments: {} });
    await bridge.sendToolResult(toolResult);
  }
  window.appReady = true;
};
