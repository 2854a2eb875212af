// faxhub's MCP App: the whole fax inside the chat. Every call to faxhub
// goes through the host's bridge (App.callServerTool), so the page holds
// no token; the only direct requests are the PUT of the file to the
// upload URL create_upload hands out (a capability of its own) and the
// page images of preview_fax's signed links. See docs/mcp.md, "The app".
import { App } from "@modelcontextprotocol/ext-apps";

const $ = (id) => document.getElementById(id);
const FINAL = new Set(["delivered", "partial", "failed", "canceled"]);
const POLL_MS = 2000;

const app = new App({ name: "faxhub", version: "1.0.0" }, {}, { autoResize: true });

const state = { uploadToken: "", uploadPageUrl: "", faxId: "", polling: false };

function notice(text, isError) {
  $("notice").textContent = text;
  $("notice").className = isError ? "error" : "";
}

// call runs a tool through the host; a tool error (isError) or a refused
// call becomes an Error whose message is faxhub's text (it starts with the
// code: insufficient_scope: …).
async function call(name, args) {
  const r = await app.callServerTool({ name, arguments: args });
  if (r.isError) {
    const text = (r.content || []).map((c) => c.text || "").join(" ").trim();
    throw new Error(text || name + " failed");
  }
  return r.structuredContent || JSON.parse((r.content || [])[0]?.text || "{}");
}

function link(text, url) {
  const li = document.createElement("li");
  const a = document.createElement("a");
  a.textContent = text;
  a.href = url;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  // Sandboxed frames may not open windows: ask the host first.
  a.addEventListener("click", async (ev) => {
    ev.preventDefault();
    try {
      const r = await app.openLink({ url });
      if (r && r.isError) throw new Error("refused");
    } catch {
      window.open(url, "_blank", "noopener");
    }
  });
  li.appendChild(a);
  $("links").appendChild(li);
  return a;
}

// ---- 1. the file

function putFile(url, file) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("PUT", url);
    xhr.setRequestHeader("Content-Type", file.type || "application/octet-stream");
    const bar = $("progress");
    bar.hidden = false;
    bar.value = 0;
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) bar.value = Math.round((100 * e.loaded) / e.total);
    };
    xhr.onload = () => {
      let body = {};
      try { body = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
      if (xhr.status >= 200 && xhr.status < 300) {
        bar.value = 100;
        resolve(body);
      } else {
        reject(new Error((body.code ? body.code + ": " : "") + (body.detail || body.title || "upload failed (" + xhr.status + ")")));
      }
    };
    xhr.onerror = () => reject(new Error("the upload could not reach faxhub"));
    xhr.send(file);
  });
}

async function upload(file) {
  if (!file) return;
  $("preview").disabled = true;
  $("send").disabled = true;
  $("file-state").textContent = "Uploading " + file.name + "…";
  try {
    const up = await call("create_upload", { fileName: file.name.slice(0, 255) });
    state.uploadPageUrl = up.uploadPageUrl;
    if (file.size > up.maxBytes) throw new Error("file_too_large: this server takes files up to " + up.maxBytes + " bytes");
    const res = await putFile(up.uploadUrl, file);
    state.uploadToken = up.uploadToken;
    const pages = res.document && res.document.pages;
    $("file-state").textContent = file.name + " uploaded" + (pages ? " (" + pages + (pages === 1 ? " page)" : " pages)") : "") + ".";
    $("file-state").dataset.uploaded = "true";
    $("preview").disabled = false;
    notice("");
  } catch (e) {
    $("file-state").textContent = "";
    notice(e.message + (state.uploadPageUrl ? " — you can also upload at " + state.uploadPageUrl : ""), true);
  }
}

$("file").addEventListener("change", (e) => upload(e.target.files[0]));
const drop = $("drop");
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  upload(e.dataTransfer.files[0]);
});

// ---- 2. destination, cover page, preview and quote

$("cover").addEventListener("change", () => { $("cover-fields").hidden = !$("cover").checked; });

// faxArgs are create_fax_draft's (and preview_fax's) arguments.
function faxArgs() {
  const args = { to: $("to").value.trim(), uploadToken: state.uploadToken };
  if ($("cover").checked) {
    const cp = {};
    for (const f of ["recipientName", "recipientCompany", "senderName", "subject", "message"]) {
      const v = $(f).value.trim();
      if (v) cp[f] = v;
    }
    if (Object.keys(cp).length) args.coverPage = cp;
    else args.cover = true;
  }
  return args;
}

function money(q) {
  const usd = String(q.currency).toLowerCase() === "usd";
  return (usd ? "$" : "") + q.amount + (usd ? "" : " " + String(q.currency).toUpperCase());
}

// No <form>: hosts sandbox the frame without allow-forms, where a submit
// is blocked before any handler sees it. Enter in a field previews.
$("fax-form").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && e.target.tagName === "INPUT" && !$("preview").disabled) {
    e.preventDefault();
    preview();
  }
});
$("preview").addEventListener("click", () => preview());

async function preview() {
  const args = faxArgs();
  if (!args.to) { notice("Enter the fax number to send to.", true); $("to").focus(); return; }
  $("preview").disabled = true;
  notice("Rendering the pages…");
  try {
    const p = await call("preview_fax", args);
    const pages = $("pages");
    pages.replaceChildren();
    p.pageImages.forEach((src, i) => {
      const img = document.createElement("img");
      img.src = src;
      img.alt = "Page " + (i + 1) + " as it will be faxed";
      pages.appendChild(img);
    });
    const q = p.quote;
    $("quote").textContent = q ? q.billedPages + (q.billedPages === 1 ? " page" : " pages") + " to " + q.to + ": " + money(q) : p.pages + " pages";
    $("quote").dataset.amount = q ? q.amount : "";
    $("step-preview").hidden = false;
    $("send").disabled = false;
    notice("");
  } catch (err) {
    notice(err.message, true);
  } finally {
    $("preview").disabled = false;
  }
}

// ---- 3. send (or hand the owner the draft's page)

$("send").addEventListener("click", async () => {
  $("send").disabled = true;
  $("links").replaceChildren();
  notice("Sending…");
  let draft;
  try {
    draft = await call("create_fax_draft", faxArgs());
  } catch (err) {
    notice(err.message, true);
    $("send").disabled = false;
    return;
  }
  try {
    const fax = await sendFax(draft.draftId);
    notice("");
    follow(fax);
  } catch (err) {
    // Without fax:send (or without credits) the owner pays for exactly
    // this draft on its page; nothing was charged.
    $("step-follow").hidden = false;
    $("status").textContent = "Not sent: " + err.message;
    $("status").dataset.status = "draft";
    link("Review and pay for this fax (owner)", draft.checkoutUrl).id = "checkout";
    notice("The draft is ready; the owner can send it from its page.", false);
  }
});

// ---- 3b. the owner's approval

const APPROVAL_POLL_MS = 3000;
const APPROVAL_PAGE = /(https?:\/\/[^\s"'<>]+\/console\/approvals\/(apr_[A-Za-z0-9_-]+))/;

// approvalOf is the approval page send_fax pointed the owner at: a URL
// elicitation in an input-required result (2026-07-28 hosts) or in a
// -32042 error's data, else the link in the error's message (a host that
// relays only the message); null when send_fax did not ask.
function approvalOf(x) {
  // inputRequests' entries are embedded requests: {method, params}.
  const els = x?.data?.elicitations || Object.values(x?.inputRequests || {}).map((r) => r?.params || r);
  const el = els.find((e) => e && e.mode === "url" && e.url);
  if (el) return { id: el.elicitationId, url: el.url };
  const m = APPROVAL_PAGE.exec(String(x?.message || ""));
  return m ? { id: m[2], url: m[1] } : null;
}

// sendFax sends the draft; when faxhub asks the owner's approval first, it
// shows the approval page's link and calls send_fax again with the
// approval id until the owner decides (approved: the fax; declined or
// expired: a tool error, nothing charged).
async function sendFax(draftId) {
  let approvalId = "";
  for (;;) {
    let asked;
    try {
      const r = await app.callServerTool({ name: "send_fax", arguments: approvalId ? { draftId, approvalId } : { draftId } });
      asked = approvalOf(r);
      if (!asked) {
        if (r.isError) throw new Error((r.content || []).map((c) => c.text || "").join(" ").trim() || "send_fax failed");
        return r.structuredContent || JSON.parse((r.content || [])[0]?.text || "{}");
      }
    } catch (err) {
      asked = approvalOf(err);
      if (!asked) throw err;
    }
    if (!approvalId) {
      $("step-follow").hidden = false;
      $("status").textContent = "Waiting for the owner to approve this fax with their passkey. Nothing is sent or charged until then.";
      $("status").dataset.status = "approval";
      link("Approve this fax (owner)", asked.url).id = "approve";
    }
    approvalId = asked.id;
    await new Promise((r) => setTimeout(r, APPROVAL_POLL_MS));
  }
}

// ---- 4. follow the fax until it is final

async function follow(fax) {
  state.faxId = fax.faxId;
  $("step-follow").hidden = false;
  show(fax);
  if (state.polling) return;
  state.polling = true;
  while (!FINAL.has(fax.status)) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    try {
      fax = await call("get_fax_status", { faxId: state.faxId });
      show(fax);
    } catch (err) {
      notice(err.message, true);
    }
  }
  state.polling = false;
  await proofs(fax.faxId);
}

function show(fax) {
  const s = $("status");
  s.textContent = "Fax " + fax.faxId + " to " + fax.to + ": " + fax.status +
    (fax.pagesSent ? " (" + fax.pagesSent + " of " + fax.pages + " pages sent)" : "") +
    (fax.failureReason ? " — " + fax.failureReason : "");
  s.dataset.status = fax.status;
}

async function proofs(faxId) {
  $("links").replaceChildren();
  const tries = [
    ["get_fax_report", "Transmission report (PDF)", (r) => r.url],
    ["get_fax_document", "The document as faxed (PDF)", (r) => r.url],
    ["get_fax_receipt", "Signed delivery receipt (JWS)", (r) => "data:application/jose;charset=utf-8," + encodeURIComponent(r.receipt)],
  ];
  for (const [tool, text, url] of tries) {
    try {
      link(text, url(await call(tool, { faxId }))).dataset.tool = tool;
    } catch { /* not available for this fax (e.g. never faxed) */ }
  }
}

// ---- results of tools the model called, shown with this app

app.ontoolresult = (params) => {
  const r = params && params.structuredContent;
  if (!r || params.isError) return;
  if (r.uploadToken && r.uploaded) {
    state.uploadToken = r.uploadToken;
    $("file-state").textContent = "A document is uploaded.";
    $("preview").disabled = false;
  } else if (r.uploadPageUrl) {
    state.uploadPageUrl = r.uploadPageUrl;
  }
  if (r.draftId && r.to) $("to").value = r.to;
  if (r.faxId && r.status) follow(r);
};

app.connect().then(
  () => notice(""),
  (e) => notice("This page runs inside a chat app that supports MCP Apps (" + e.message + ").", true),
);
