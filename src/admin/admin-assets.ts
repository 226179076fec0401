// The UI's only stylesheet and script, served from the plugin's own routes so the
// Content-Security-Policy can forbid inline code ('self' only). No build step: plain CSS and ES2017.

/** The stylesheet of every page. */
export const ADMIN_CSS = `
:root { color-scheme: light dark; --fg: #1d2330; --muted: #6b7280; --line: #d8dce3; --bg: #fff;
  --bad: #b42318; --warn-bg: #fff4e5; --ok: #067647; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e8ee; --muted: #9aa3b2; --line: #333a46;
  --bg: #14171c; --warn-bg: #3a2a12; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1.5rem; align-items: baseline; padding: .75rem 1.25rem;
  border-bottom: 1px solid var(--line); }
header .brand { font-weight: 700; }
header nav a { margin-right: 1rem; }
header form { margin: 0; }
main { padding: 1rem 1.25rem; max-width: 1200px; }
a { color: inherit; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; }
.muted { color: var(--muted); }
.banner { padding: .6rem .9rem; margin: .5rem 0; border: 1px solid var(--bad); background: var(--warn-bg); }
.status { font-weight: 600; }
.status-failed, .status-crashed, .status-abandoned { color: var(--bad); }
.status-succeeded { color: var(--ok); }
pre { white-space: pre-wrap; word-break: break-word; padding: .5rem; border: 1px solid var(--line);
  max-height: 30rem; overflow: auto; }
form.inline { display: inline; }
.drift { color: var(--bad); }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; margin-bottom: .5rem; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; }
button { cursor: pointer; }
a.button { padding: .2rem .6rem; border: 1px solid var(--line); border-radius: 3px; text-decoration: none; }
dl.row { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
dl.row dt { font-weight: 600; }
`;

/**
 * Progressive enhancement: times in the browser's zone, and the job page's live status (SSE,
 * falling back to polling the JSON state when the stream is refused or breaks).
 */
export const ADMIN_JS = `
(function () {
  'use strict';
  function pad(n) { return (n < 10 ? '0' : '') + n; }
  // "2026-03-29 03:30:00 +02:00": the browser's zone, with its offset so the text is unambiguous;
  // the server's UTC text stays in the title attribute (hover).
  function localText(d) {
    var off = -d.getTimezoneOffset();
    var sign = off < 0 ? '-' : '+';
    off = Math.abs(off);
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' +
      pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds()) + ' ' +
      sign + pad(Math.floor(off / 60)) + ':' + pad(off % 60);
  }
  function localTimes(root) {
    var els = root.querySelectorAll('time[datetime]');
    for (var i = 0; i < els.length; i++) {
      var d = new Date(els[i].getAttribute('datetime'));
      if (!isNaN(d.getTime())) els[i].textContent = localText(d);
    }
  }
  localTimes(document);
  var live = document.getElementById('live');
  if (!live) return;
  var TERMINAL = ['succeeded', 'failed', 'cancelled', 'crashed', 'abandoned'];
  var pollMs = Number(live.getAttribute('data-poll-ms')) || 2000;
  var stateUrl = live.getAttribute('data-state-url');
  var streamUrl = live.getAttribute('data-stream-url');
  var shownStatus = live.getAttribute('data-status');
  function apply(state) {
    var status = document.getElementById('job-status');
    if (status) { status.textContent = state.status; status.className = 'status status-' + state.status; }
    var progress = document.getElementById('job-progress');
    if (progress) progress.textContent = JSON.stringify(state.progress);
    // A settled job has new attempts, events and actions: swap them in from a fresh copy of this
    // page, in place (no navigation, so the reader keeps their scroll position and nothing flashes).
    if (state.status !== shownStatus && TERMINAL.indexOf(state.status) >= 0) refreshMain();
    return TERMINAL.indexOf(state.status) >= 0;
  }
  function refreshMain() {
    fetch(location.pathname, { credentials: 'same-origin', headers: { accept: 'text/html' } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (text) {
        if (text === null) return;
        var fresh = new DOMParser().parseFromString(text, 'text/html').querySelector('main');
        var main = document.querySelector('main');
        if (!fresh || !main) return;
        main.innerHTML = fresh.innerHTML;
        localTimes(main);
      })
      .catch(function () { /* the status shown is already right; the rest waits for a reload */ });
  }
  function poll() {
    fetch(stateUrl, { credentials: 'same-origin', headers: { accept: 'application/json' } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (s) { if (!s || !apply(s)) setTimeout(poll, pollMs); })
      .catch(function () { setTimeout(poll, pollMs); });
  }
  if (TERMINAL.indexOf(shownStatus) >= 0) return;
  if (!window.EventSource) { poll(); return; }
  var es = new EventSource(streamUrl);
  es.addEventListener('state', function (e) { if (apply(JSON.parse(e.data))) es.close(); });
  es.onerror = function () { es.close(); setTimeout(poll, pollMs); };
})();
`;
