// The console's ceremony script: it runs the WebAuthn ceremonies
// (navigator.credentials.create / get) between the server's begin and
// finish endpoints. Everything else works without JavaScript (send.js
// only enhances the send page).
(function () {
  "use strict";

  function toBuf(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) s += "=";
    var bin = atob(s), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }
  function toB64u(buf) {
    if (!buf) return undefined;
    var u = new Uint8Array(buf), s = "";
    for (var i = 0; i < u.length; i++) s += String.fromCharCode(u[i]);
    return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  async function post(url, body) {
    var headers = { "Content-Type": "application/json", "Accept": "application/json" };
    var meta = document.querySelector('meta[name="csrf-token"]');
    if (meta) headers["X-CSRF-Token"] = meta.content;
    var res = await fetch(url, { method: "POST", headers: headers, body: JSON.stringify(body || {}), credentials: "same-origin" });
    var data = {};
    try { data = await res.json(); } catch (e) { /* not JSON */ }
    if (!res.ok) {
      var err = new Error(data.detail || ("The server answered " + res.status + "."));
      // A fax approval the balance does not cover links to adding credits.
      if (typeof data.buy_credits_url === "string" && data.buy_credits_url.charAt(0) === "/") err.link = data.buy_credits_url;
      throw err;
    }
    return data;
  }

  function creationOptions(o) {
    var p = o.publicKey;
    p.challenge = toBuf(p.challenge);
    p.user.id = toBuf(p.user.id);
    (p.excludeCredentials || []).forEach(function (c) { c.id = toBuf(c.id); });
    return { publicKey: p };
  }
  function requestOptions(o) {
    var p = o.publicKey;
    p.challenge = toBuf(p.challenge);
    (p.allowCredentials || []).forEach(function (c) { c.id = toBuf(c.id); });
    return { publicKey: p };
  }
  function common(cred) {
    return {
      id: cred.id, rawId: toB64u(cred.rawId), type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment || undefined,
      clientExtensionResults: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {}
    };
  }
  function attestation(cred) {
    var j = common(cred);
    j.response = {
      clientDataJSON: toB64u(cred.response.clientDataJSON),
      attestationObject: toB64u(cred.response.attestationObject),
      transports: cred.response.getTransports ? cred.response.getTransports() : []
    };
    return j;
  }
  function assertion(cred) {
    var j = common(cred);
    j.response = {
      clientDataJSON: toB64u(cred.response.clientDataJSON),
      authenticatorData: toB64u(cred.response.authenticatorData),
      signature: toB64u(cred.response.signature),
      userHandle: toB64u(cred.response.userHandle)
    };
    return j;
  }

  function explain(err) {
    if (err && err.name === "NotAllowedError") return "The passkey prompt was closed or timed out. Try again when you are ready.";
    if (err && err.name === "InvalidStateError") return "This device already has a passkey for your account.";
    if (err && err.name === "SecurityError") return "Passkeys are not available on this address. Open faxhub at its configured URL.";
    return (err && err.message) || "Something went wrong.";
  }

  async function run(btn) {
    var scope = btn.closest("form, .card, section") || document;
    var status = scope.querySelector("[data-webauthn-status]");
    var say = function (msg, isError) {
      if (!status) return;
      status.textContent = msg;
      status.classList.toggle("error", !!isError);
    };
    var kind = btn.dataset.webauthn;
    var extra = {};
    if (btn.dataset.token) extra.token = btn.dataset.token;
    if (btn.dataset.binding) extra.binding = btn.dataset.binding;
    var nameField = scope.querySelector('[data-webauthn-field="name"]');
    btn.disabled = true;
    try {
      say(kind === "register" ? "Follow your device's prompt to create the passkey…" : "Follow your device's prompt…");
      var options = await post(btn.dataset.begin, extra);
      var body = Object.assign({}, extra);
      if (kind === "register") {
        body.credential = attestation(await navigator.credentials.create(creationOptions(options)));
        if (nameField) body.name = nameField.value;
      } else {
        body.credential = assertion(await navigator.credentials.get(requestOptions(options)));
      }
      if (kind === "login" && btn.dataset.next) body.next = btn.dataset.next;
      if (kind === "approve") {
        var form = btn.form;
        body.scopes = Array.prototype.map.call(form.querySelectorAll('input[name="scope"]:checked'), function (c) { return c.value; });
        if (btn.dataset.return) body.return = btn.dataset.return;
      }
      var done = await post(btn.dataset.finish, body);
      say("Done.");
      window.location.assign(done.redirect || "/console");
    } catch (err) {
      say(explain(err), true);
      if (err && err.link && status) {
        var a = document.createElement("a");
        a.href = err.link;
        a.textContent = "Add credits";
        status.appendChild(document.createTextNode(" "));
        status.appendChild(a);
      }
      btn.disabled = false;
    }
  }

  function init() {
    var supported = !!(window.PublicKeyCredential && navigator.credentials);
    document.querySelectorAll("[data-webauthn]").forEach(function (btn) {
      if (!supported) {
        var s = (btn.closest("form, .card, section") || document).querySelector("[data-webauthn-status]");
        if (s) { s.textContent = "This browser does not support passkeys. Use a current version of Chrome, Safari, Firefox or Edge."; s.classList.add("error"); }
        return;
      }
      btn.hidden = false;
      btn.addEventListener("click", function () { run(btn); });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
