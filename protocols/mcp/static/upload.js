// Reads the upload token from the URL fragment and PUTs the chosen file to
// the upload URL. No OAuth header: the token in the URL is the credential.
(function () {
  "use strict";
  var api = document.body.getAttribute("data-api");
  var token = decodeURIComponent(location.hash.replace(/^#/, ""));
  var drop = document.getElementById("drop");
  var input = document.getElementById("file");
  var bar = document.getElementById("progress");
  var status = document.getElementById("status");
  function say(text, cls) { status.textContent = text; status.className = cls || ""; }
  if (!token) { say("This link has no upload token. Ask your chat app for a new upload link.", "err"); input.disabled = true; return; }
  // Keep the token out of the address bar once read.
  history.replaceState(null, "", location.pathname);
  function send(file) {
    if (!file) return;
    bar.hidden = false; bar.value = 0;
    say("Uploading " + file.name + "…");
    var xhr = new XMLHttpRequest();
    xhr.open("PUT", api + "/api/v1/uploads/" + encodeURIComponent(token));
    if (file.type) xhr.setRequestHeader("Content-Type", file.type);
    xhr.upload.onprogress = function (e) { if (e.lengthComputable) bar.value = Math.round(100 * e.loaded / e.total); };
    xhr.onload = function () {
      if (xhr.status >= 200 && xhr.status < 300) {
        bar.value = 100;
        var pages = "";
        try { var d = JSON.parse(xhr.responseText); if (d.pages) pages = " (" + d.pages + " page" + (d.pages === 1 ? "" : "s") + ")"; } catch (e) {}
        say("Uploaded" + pages + ". Go back to your chat app and tell it the file is uploaded.", "ok");
        input.disabled = true;
        return;
      }
      var msg = "The upload failed (" + xhr.status + ").";
      try { var p = JSON.parse(xhr.responseText); if (p.detail) msg = p.detail; } catch (e) {}
      say(msg, "err");
    };
    xhr.onerror = function () { say("The upload failed: the connection was lost. Try again.", "err"); };
    xhr.send(file);
  }
  input.addEventListener("change", function () { send(input.files[0]); });
  drop.addEventListener("dragover", function (e) { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", function () { drop.classList.remove("over"); });
  drop.addEventListener("drop", function (e) { e.preventDefault(); drop.classList.remove("over"); send(e.dataTransfer.files[0]); });
})();
