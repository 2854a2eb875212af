// The owner's side of the delegated flow without a browser: the console's
// device page and approval inbox, read and posted exactly as a browser
// does (session cookie, the form's hidden fields, Origin). Only what needs
// no passkey: approving a device (not UV-gated) and declining.
import assert from 'node:assert/strict';
import { BASE, unescapeHTML } from './lib.mjs';

const attr = (tag, name) => {
  const m = tag.match(new RegExp(`\\s${name}="([^"]*)"`));
  return m ? unescapeHTML(m[1]) : undefined;
};

// forms lists the post forms of a page: action, the hidden fields, the
// checkboxes (name, value, checked) and the text inputs by name.
export function forms(html) {
  const out = [];
  for (const m of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)) {
    if ((attr(m[1], 'method') ?? 'get').toLowerCase() !== 'post') continue;
    const f = { action: attr(m[1], 'action') ?? '', hidden: [], boxes: [], inputs: [], body: m[2], tag: m[1] };
    for (const i of m[2].matchAll(/<input\b[^>]*>/g)) {
      const type = (attr(i[0], 'type') ?? 'text').toLowerCase();
      const name = attr(i[0], 'name');
      if (!name) continue;
      if (type === 'hidden') f.hidden.push([name, attr(i[0], 'value') ?? '']);
      else if (type === 'checkbox') f.boxes.push({ name, value: attr(i[0], 'value') ?? 'on', checked: /\schecked\b/.test(i[0]) });
      else if (type === 'text' || type === 'search') f.inputs.push({ name, id: attr(i[0], 'id') });
    }
    out.push(f);
  }
  return out;
}

async function postForm(cookie, action, pageURL, form) {
  const res = await fetch(new URL(action || pageURL, pageURL), {
    method: 'POST', redirect: 'manual', body: form,
    headers: { cookie, origin: BASE, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' },
  });
  return { status: res.status, text: await res.text(), location: res.headers.get('location') };
}

// approveDevice opens a device link as the owner and approves it with the
// user code, ticking capabilities (default: every requested one, as the
// page ticks them). It throws when the page or the post refuses.
export async function approveDevice(cookie, link, userCode, { capabilities, decision = 'approve' } = {}) {
  const res = await fetch(link, { headers: { cookie }, redirect: 'manual' });
  const page = await res.text();
  assert.equal(res.status, 200, `device page: ${res.status} ${page.slice(0, 400)}`);
  const f = forms(page).find((x) => /name="decision"/.test(x.body));
  assert.ok(f, 'the device page has its decision form');
  const form = new URLSearchParams(f.hidden);
  const codeInput = f.inputs.find((i) => /code/.test(i.name));
  if (codeInput && !form.has(codeInput.name)) form.set(codeInput.name, userCode);
  for (const b of f.boxes) {
    if (capabilities ? capabilities.includes(b.value) : b.checked) form.append(b.name, b.value);
  }
  form.set('decision', decision);
  let r = await postForm(cookie, f.action, link, form);
  if (r.status === 303 && r.location) {
    const next = await fetch(new URL(r.location, link), { headers: { cookie } });
    r = { status: next.status, text: await next.text() };
  }
  assert.equal(r.status, 200, `device post: ${r.status} ${r.text.slice(0, 400)}`);
  assert.doesNotMatch(r.text, /class="[^"]*\berror\b/, `the device page shows an error: ${r.text.slice(0, 800)}`);
  return r.text;
}

// inboxCard finds the first undecided approval card in the inbox (or on
// page, e.g. one approval's own page) whose text matches.
export async function inboxCard(cookie, match, page = `${BASE}/console/approvals`) {
  const res = await fetch(page, { headers: { cookie } });
  const html = await res.text();
  assert.equal(res.status, 200, `inbox: ${res.status}`);
  const cards = html.split('<article class="card approval"').slice(1);
  const card = cards.find((c) => match.test(c) && /<form method="post"/.test(c));
  assert.ok(card, `no undecided approval matching ${match} in the inbox`);
  const f = forms(`<article${card}`)[0];
  return { ...f, html: card };
}

// declineInbox declines the undecided approval that matches, in the inbox
// or on page.
export async function declineInbox(cookie, match, page) {
  const f = await inboxCard(cookie, match instanceof RegExp ? match : new RegExp(match), page);
  const form = new URLSearchParams(f.hidden);
  form.set('decision', 'decline');
  const r = await postForm(cookie, f.action, `${BASE}/console/approvals`, form);
  assert.equal(r.status, 303, `inbox decline: ${r.status} ${r.text.slice(0, 400)}`);
}

// revokeHostInConsole revokes a host from the Hosts page (the confirm box
// ticked), as the owner does.
export async function revokeHostInConsole(cookie, hostID) {
  const res = await fetch(`${BASE}/console/hosts`, { headers: { cookie } });
  const page = await res.text();
  assert.equal(res.status, 200, `hosts page: ${res.status}`);
  const f = forms(page).find((x) => x.action === `/console/hosts/${hostID}/revoke`);
  assert.ok(f, `the hosts page has the revoke form of ${hostID}`);
  const form = new URLSearchParams(f.hidden);
  form.set('confirm', 'yes');
  const r = await postForm(cookie, f.action, `${BASE}/console/hosts`, form);
  assert.ok(r.status === 303 || r.status === 200, `host revoke: ${r.status} ${r.text.slice(0, 400)}`);
}
