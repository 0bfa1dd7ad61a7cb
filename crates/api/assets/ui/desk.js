// The desk's few live parts. Pages work without this file; it adds live counts, a case page
// that updates itself when its decision arrives, evidence highlighting, keyboard shortcuts
// and the upload's progress. Served from /assets (the CSP allows no inline script).
"use strict";

const csrf = () => document.querySelector("main")?.dataset.csrf || "";

// A background refresh: marked so that it does not count as activity (an idle session still
// ends), and answered 401 once the session has ended.
async function poll(url) {
  const r = await fetch(url, { headers: { Accept: "application/json", "X-Ironclad-Poll": "1" } });
  if (r.status === 401) { window.location.reload(); return null; }
  if (!r.ok) return null;
  return r.json();
}

// Runs `step` every `every()` ms while the page is visible.
function every(step, period) {
  const tick = async () => {
    if (!document.hidden) {
      try { await step(); } catch (_) { /* offline for a moment: try again next time */ }
    }
    setTimeout(tick, period());
  };
  setTimeout(tick, period());
}

// Cases: counts per status, refreshed every few seconds.
function liveCounts() {
  const counts = document.querySelectorAll("[data-count]");
  if (!counts.length) return;
  every(async () => {
    const body = await poll("/desk/counts");
    if (!body) return;
    counts.forEach((el) => {
      const n = body.counts[el.dataset.count];
      el.textContent = String(n === undefined ? 0 : n);
    });
  }, () => 5000);
}

// Case page: when the case's status, generation or decision changes, show it. A page with
// nothing typed into it reloads; one with typed text says so and waits for the person.
function liveCase() {
  const grid = document.querySelector("[data-live]");
  if (!grid) return;
  const shown = grid.dataset.state;
  const waiting = /^(INGESTED|PROCESSING):/.test(shown);
  let typed = false;
  grid.querySelectorAll("form").forEach((f) => f.addEventListener("input", () => { typed = true; }));
  let done = false;
  every(async () => {
    if (done) return;
    const body = await poll(grid.dataset.live);
    if (!body || body.state === shown) return;
    done = true;
    if (typed) { document.getElementById("live-note").hidden = false; }
    else { window.location.reload(); }
  }, () => (waiting ? 1500 : 15000));
}

// Case page: a rule's or a fact's boxes light up when it is opened or its page link followed.
// Side by side, the page scrolls to the lit box while the rules column stays where it is.
function evidence() {
  const light = (attr, value) => {
    document.querySelectorAll("rect.lit").forEach((r) => r.classList.remove("lit"));
    const rects = document.querySelectorAll(`rect[${attr}="${CSS.escape(value)}"]`);
    rects.forEach((r) => r.classList.add("lit"));
    return rects;
  };
  const sideBySide = window.matchMedia("(min-width: 1001px)");
  document.querySelectorAll("details.rule").forEach((d) => {
    d.addEventListener("toggle", () => {
      if (!d.open) return;
      const rects = Array.from(light("data-rule", d.dataset.rule));
      // The value that disagrees is the one to look at first.
      const first = rects.find((r) => r.classList.contains("rule-odd")) || rects[0];
      if (first && sideBySide.matches) {
        first.closest("figure")?.scrollIntoView({ block: "start", behavior: "smooth" });
      }
    });
  });
  document.querySelectorAll("a.jump").forEach((a) => {
    a.addEventListener("click", () => {
      if (a.dataset.rule) light("data-rule", a.dataset.rule);
      if (a.dataset.fact) light("data-fact", a.dataset.fact);
    });
  });
}

// Keyboard: j/k/Enter/n in the queue; a (approve) and n (next case) on a case.
function shortcuts() {
  const rows = Array.from(document.querySelectorAll("#queue tbody tr"));
  let at = -1;
  const focus = (i) => {
    if (!rows.length) return;
    at = Math.max(0, Math.min(rows.length - 1, i));
    rows.forEach((r) => r.classList.remove("focused"));
    rows[at].classList.add("focused");
    rows[at].querySelector("a")?.focus();
  };
  // The case this page shows, so that n skips it.
  const here = document.querySelector("[data-live]")?.dataset.live?.split("/")[2];
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement) return;
    if (e.key === "j") { focus(at + 1); e.preventDefault(); }
    else if (e.key === "k") { focus(at - 1); e.preventDefault(); }
    else if (e.key === "n") {
      window.location.href = here ? `/queue/next?after=${encodeURIComponent(here)}` : "/queue/next";
      e.preventDefault();
    }
    else if (e.key === "a") {
      const approve = document.querySelector('#review-form input[value="APPROVE"]');
      if (approve) { approve.checked = true; document.getElementById("review-submit")?.focus(); e.preventDefault(); }
    }
  });
}

// Upload: several files, drag and drop, a remove control per file, per-file progress and
// errors. The idempotency key comes with the page, and the button is off while sending: a
// double click, or a retry after a dropped connection, creates one case.
function upload() {
  const form = document.getElementById("upload-form");
  if (!form) return;
  const input = document.getElementById("files");
  const drop = document.getElementById("drop");
  const list = document.getElementById("file-list");
  const result = document.getElementById("upload-result");
  const submit = document.getElementById("upload-submit");
  let files = [];
  let sending = false;
  const show = () => {
    list.replaceChildren(...files.map((f, i) => {
      const li = document.createElement("li");
      li.id = `file-${i}`;
      const name = document.createElement("span");
      name.className = "name";
      name.textContent = `${f.name} (${Math.ceil(f.size / 1024)} KiB)`;
      const bar = document.createElement("progress");
      bar.max = 100; bar.value = 0;
      bar.setAttribute("aria-label", `Upload of ${f.name}`);
      const note = document.createElement("span");
      note.className = "note";
      if (f.size === 0) { li.classList.add("failed"); note.textContent = "empty file: it would be refused"; }
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "remove";
      remove.textContent = "Remove";
      remove.setAttribute("aria-label", `Remove ${f.name}`);
      remove.addEventListener("click", () => { files.splice(i, 1); show(); result.textContent = ""; input.focus(); });
      li.append(name, bar, note, remove);
      return li;
    }));
  };
  input.addEventListener("change", () => { files = Array.from(input.files); show(); result.textContent = ""; input.value = ""; });
  ["dragenter", "dragover"].forEach((ev) => drop.addEventListener(ev, (e) => { e.preventDefault(); drop.classList.add("over"); }));
  ["dragleave", "drop"].forEach((ev) => drop.addEventListener(ev, (e) => { e.preventDefault(); drop.classList.remove("over"); }));
  drop.addEventListener("drop", (e) => { files = files.concat(Array.from(e.dataTransfer.files)); show(); });
  const busy = (on) => {
    sending = on;
    submit.disabled = on;
    form.setAttribute("aria-busy", on ? "true" : "false");
    list.querySelectorAll("button.remove").forEach((b) => { b.disabled = on; });
  };
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (sending) return;
    if (!files.length) { result.textContent = "Choose at least one file."; return; }
    busy(true);
    result.textContent = "Sending…";
    const body = new FormData();
    body.append("external_reference", document.getElementById("external_reference").value);
    files.forEach((f) => body.append("file", f, f.name));
    const ends = []; let total = 0;
    files.forEach((f) => { total += f.size; ends.push(total); });
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/v1/cases");
    xhr.setRequestHeader("X-CSRF-Token", csrf());
    xhr.setRequestHeader("Idempotency-Key", form.dataset.idempotencyKey);
    xhr.upload.addEventListener("progress", (ev) => {
      files.forEach((f, i) => {
        const start = i ? ends[i - 1] : 0;
        const done = Math.max(0, Math.min(f.size, ev.loaded - start));
        const bar = document.querySelector(`#file-${i} progress`);
        if (bar) bar.value = f.size ? (100 * done) / f.size : 100;
      });
    });
    xhr.addEventListener("load", () => {
      let answer = {};
      try { answer = JSON.parse(xhr.responseText); } catch (_) { /* not JSON */ }
      if (xhr.status === 201 || xhr.status === 200) {
        files.forEach((_, i) => { const n = document.querySelector(`#file-${i} .note`); if (n) n.textContent = "received"; });
        list.querySelectorAll("button.remove").forEach((b) => b.remove());
        const id = answer.case_id || answer.id;
        result.replaceChildren("Case created. ");
        if (id) { const a = document.createElement("a"); a.href = `/cases/${id}`; a.textContent = "Open the case"; result.append(a, " · "); }
        const again = document.createElement("a"); again.href = "/upload"; again.textContent = "Upload another dossier";
        result.append(again);
        // This form's key made this case: another dossier needs a new page (and key).
        form.querySelectorAll("input, button").forEach((el) => { el.disabled = true; });
        return;
      }
      busy(false);
      // Nothing was kept: the bars go back to empty.
      list.querySelectorAll("progress").forEach((bar) => { bar.value = 0; });
      const err = answer.error || { message: `upload failed (${xhr.status})` };
      const named = err.details && (err.details.file || err.details.filename);
      let marked = false;
      files.forEach((f, i) => {
        const li = document.getElementById(`file-${i}`);
        if (named && f.name === named && li) { li.classList.add("failed"); li.querySelector(".note").textContent = err.message; marked = true; }
      });
      result.textContent = marked
        ? "One file was refused; nothing was created. Remove it (or choose the files again) and upload again."
        : `Nothing was created: ${err.message}`;
    });
    xhr.addEventListener("error", () => { busy(false); result.textContent = "The connection failed. Upload again: if the first try arrived, no second case is made."; });
    xhr.send(body);
  });
}

document.addEventListener("DOMContentLoaded", () => { liveCounts(); liveCase(); evidence(); shortcuts(); upload(); });
