// A fax's page follows the fax while it is not final: it asks the server
// for the same page now and then and, when the fax moved (status,
// attempts, pages sent), shows the new page and says so to screen readers.
// Without script the page is the same, reloaded by hand. The server
// renders everything: this only swaps what it rendered.
(function () {
  "use strict";

  var live = document.querySelector("[data-fax-live]");
  if (!live || !window.fetch || !window.DOMParser) return;

  // Polite announcements, in a region that outlives the swaps.
  var region = document.createElement("p");
  region.className = "sr-only";
  region.setAttribute("role", "status");
  region.setAttribute("aria-live", "polite");
  document.body.appendChild(region);

  var delay = 2000;
  var maxDelay = 15000;

  function version(root) {
    var el = root.querySelector("[data-fax-version]");
    return el ? el.getAttribute("data-fax-version") : "";
  }

  // swap replaces main's content with the fetched page's, keeping focus on
  // the same control when the new page has it.
  function swap(doc) {
    var main = document.getElementById("main");
    var next = doc.getElementById("main");
    if (!main || !next) return;
    var focused = document.activeElement;
    var keep = focused && main.contains(focused) && focused.id ? focused.id : "";
    main.replaceChildren.apply(main, Array.prototype.slice.call(next.childNodes));
    if (keep && document.getElementById(keep)) document.getElementById(keep).focus();
    var state = main.querySelector("[data-fax-state]");
    if (state) region.textContent = "The fax is now " + state.textContent.trim() + ".";
  }

  function schedule() {
    window.setTimeout(tick, delay);
    delay = Math.min(Math.round(delay * 1.5), maxDelay);
  }

  function tick() {
    if (document.hidden) {
      schedule();
      return;
    }
    fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (res) {
        if (!res.ok) throw new Error("status " + res.status);
        return res.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var v = version(doc);
        if (!v) return schedule(); // not the fax's page (signed out?): keep what is shown
        if (v !== version(document)) {
          swap(doc);
          delay = 2000;
        }
        if (document.querySelector("[data-fax-live]")) schedule();
      })
      .catch(function () {
        schedule();
      });
  }

  schedule();
})();
