// The send page's enhancements; the page works without them. It uploads
// the document with a progress bar (and takes a dropped file), and checks
// the fax number as it is typed. The server decides everything: this only
// shows its answers.
(function () {
  "use strict";

  function csrf() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.content : "";
  }

  function say(el, text, kind) {
    if (!el) return;
    el.textContent = text || "";
    el.classList.toggle("error", kind === "error");
    el.classList.toggle("ok", kind === "ok");
  }

  // A new document makes an earlier preview stale: hide it and its send
  // button (the server previews again anyway before it sends).
  function dropPreview() {
    var pv = document.getElementById("send-preview");
    if (pv) pv.hidden = true;
    var btn = document.querySelector("[data-send-submit]");
    if (btn) btn.hidden = true;
  }

  function upload(form) {
    var status = form.querySelector("[data-send-upload-status]");
    var bar = form.querySelector("[data-send-progress]");
    var button = form.querySelector('button[type="submit"]');
    var file = form.querySelector('input[type="file"]');
    if (!file.files || !file.files.length) {
      say(status, "Choose a file first.", "error");
      file.focus();
      return;
    }
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.setRequestHeader("X-CSRF-Token", csrf());
    bar.hidden = false;
    bar.value = 0;
    button.disabled = true;
    say(status, "Uploading " + file.files[0].name + "…");
    xhr.upload.onprogress = function (e) {
      if (!e.lengthComputable) return;
      bar.value = Math.round((e.loaded / e.total) * 100);
      if (e.loaded === e.total) say(status, "Uploaded; converting and counting pages…");
    };
    xhr.onload = function () {
      button.disabled = false;
      var data = {};
      try { data = JSON.parse(xhr.responseText); } catch (e) { /* not JSON */ }
      if (xhr.status !== 200 || !data.document) {
        bar.hidden = true;
        say(status, data.detail || ("The upload failed (" + xhr.status + ")."), "error");
        return;
      }
      bar.value = 100;
      var doc = document.querySelector("[data-send-document]");
      if (doc) doc.value = data.document.id;
      var summary = document.querySelector("[data-send-doc-summary]");
      if (summary) {
        summary.textContent = "Ready to fax: ";
        var strong = document.createElement("strong");
        strong.textContent = data.summary;
        summary.appendChild(strong);
        summary.appendChild(document.createTextNode(" (" + data.document.id + ")."));
      }
      say(status, "Uploaded: " + data.summary + ". Now the fax number, then preview.", "ok");
      if (data.location && window.history && history.replaceState) history.replaceState(null, "", data.location);
      dropPreview();
    };
    xhr.onerror = function () {
      button.disabled = false;
      bar.hidden = true;
      say(status, "The upload did not reach the server; check the connection and try again.", "error");
    };
    xhr.send(new FormData(form));
  }

  function initUpload(form) {
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      upload(form);
    });
    var zone = form.querySelector("[data-send-drop]");
    var file = form.querySelector('input[type="file"]');
    if (!zone || !file) return;
    ["dragenter", "dragover"].forEach(function (t) {
      zone.addEventListener(t, function (e) { e.preventDefault(); zone.classList.add("dragging"); });
    });
    ["dragleave", "drop"].forEach(function (t) {
      zone.addEventListener(t, function () { zone.classList.remove("dragging"); });
    });
    zone.addEventListener("drop", function (e) {
      e.preventDefault();
      if (!e.dataTransfer || !e.dataTransfer.files.length) return;
      file.files = e.dataTransfer.files;
      upload(form);
    });
  }

  function initCheck(input) {
    var out = document.getElementById("send-to-check");
    var timer = 0, seq = 0;
    function check() {
      var v = input.value.trim();
      var mine = ++seq;
      if (!v) { say(out, ""); input.removeAttribute("aria-invalid"); return; }
      fetch(input.getAttribute("data-check-url") + "&to=" + encodeURIComponent(v), { headers: { "Accept": "application/json" }, credentials: "same-origin" })
        .then(function (res) { return res.json().then(function (data) { return { ok: res.ok, status: res.status, data: data }; }); })
        .then(function (r) {
          if (mine !== seq) return; // a newer check is on its way
          if (r.ok) {
            say(out, r.data.summary, "ok");
            input.removeAttribute("aria-invalid");
          } else if (r.status === 429) {
            say(out, "Checking paused for a moment; the number is checked again when you preview.");
          } else {
            say(out, r.data.summary || r.data.detail || "This number cannot be checked now.", "error");
            input.setAttribute("aria-invalid", "true");
          }
        })
        .catch(function () { if (mine === seq) say(out, ""); });
    }
    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(check, 350);
    });
  }

  function init() {
    var form = document.querySelector("[data-send-upload]");
    if (form && window.FormData && window.XMLHttpRequest) initUpload(form);
    var to = document.querySelector("[data-send-to]");
    if (to && window.fetch) initCheck(to);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
