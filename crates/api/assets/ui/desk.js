// The desk's few live parts. Pages work without this file; it adds live counts, evidence
// highlighting, keyboard shortcuts and the upload's progress. Served from /assets (the CSP
// allows no inline script).
"use strict";

const csrf = () => document.querySelector("main")?.dataset.csrf || "";

// Cases: counts per status, refreshed every few seconds.
function liveCounts() {
  const counts = document.querySelectorAll("[data-count]");
  if (!counts.length) return;
  const refresh = async () => {
    try {
      const r = await fetch("/desk/counts", { headers: { Accept: "application/json" } });
      if (!r.ok) return;
      const body = await r.json();
      counts.forEach((el) => {
        const n = body.counts[el.dataset.count];
        el.textContent = String(n === undefined ? 0 : n);
      });
    } catch (_) { /* offline for a moment: keep the last numbers */ }
  };
  setInterval(refresh, 5000);
}

// Case page: a rule's or a fact's boxes light up when it is opened or its page link followed.
function evidence() {
  const light = (attr, value) => {
    document.querySelectorAll("rect.lit").forEach((r) => r.classList.remove("lit"));
    const rects = document.querySelectorAll(`rect[${attr}="${CSS.escape(value)}"]`);
    rects.forEach((r) => r.classList.add("lit"));
    return rects;
  };
  document.querySelectorAll("details.rule").forEach((d) => {
    d.addEventListener("toggle", () => {
      if (!d.open) return;
      const rects = light("data-rule", d.dataset.rule);
      if (rects.length) rects[0].closest("figure")?.scrollIntoView({ block: "start", behavior: "smooth" });
    });
  });
  document.querySelectorAll("a.jump").forEach((a) => {
    a.addEventListener("click", () => {
      if (a.dataset.rule) light("data-rule", a.dataset.rule);
      if (a.dataset.fact) light("data-fact", a.dataset.fact);
    });
  });
}

// Keyboard: j/k/Enter/n in the queue; a (approve) and n (next) on a case.
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
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement) return;
    if (e.key === "j") { focus(at + 1); e.preventDefault(); }
    else if (e.key === "k") { focus(at - 1); e.preventDefault(); }
    else if (e.key === "n") {
      // From a case, the next one after it (never the same one again).
      const here = document.querySelector(".case-head")?.dataset.case;
      window.location.href = here ? `/queue/next?from=${encodeURIComponent(here)}` : "/queue/next";
      e.preventDefault();
    }
    else if (e.key === "a") {
      const approve = document.querySelector('#review-form input[value="APPROVE"]');
      if (approve) { approve.checked = true; document.getElementById("review-submit")?.focus(); e.preventDefault(); }
    }
  });
}

// Upload: several files, drag and drop, per-file progress and per-file errors.
function upload() {
  const form = document.getElementById("upload-form");
  if (!form) return;
  const input = document.getElementById("files");
  const drop = document.getElementById("drop");
  const list = document.getElementById("file-list");
  const result = document.getElementById("upload-result");
  let files = [];
  const show = () => {
    list.replaceChildren(...files.map((f, i) => {
      const li = document.createElement("li");
      li.id = `file-${i}`;
      const name = document.createElement("span");
      name.textContent = `${f.name} (${Math.ceil(f.size / 1024)} KiB)`;
      const bar = document.createElement("progress");
      bar.max = 100; bar.value = 0;
      bar.setAttribute("aria-label", `Upload of ${f.name}`);
      const note = document.createElement("span");
      note.className = "note";
      li.append(name, bar, note);
      return li;
    }));
  };
  const add = (picked) => { files = files.concat(Array.from(picked)); show(); };
  input.addEventListener("change", () => { add(input.files); input.value = ""; });
  ["dragenter", "dragover"].forEach((ev) => drop.addEventListener(ev, (e) => { e.preventDefault(); drop.classList.add("over"); }));
  ["dragleave", "drop"].forEach((ev) => drop.addEventListener(ev, (e) => { e.preventDefault(); drop.classList.remove("over"); }));
  drop.addEventListener("drop", (e) => add(e.dataTransfer.files));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (!files.length) { result.textContent = "Choose at least one file."; return; }
    const body = new FormData();
    body.append("external_reference", document.getElementById("external_reference").value);
    files.forEach((f) => body.append("file", f, f.name));
    const ends = []; let total = 0;
    files.forEach((f) => { total += f.size; ends.push(total); });
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/v1/cases");
    xhr.setRequestHeader("X-CSRF-Token", csrf());
    xhr.setRequestHeader("Idempotency-Key", crypto.randomUUID());
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
        const id = answer.case_id || answer.id;
        result.replaceChildren("Case created. ");
        if (id) { const a = document.createElement("a"); a.href = `/cases/${id}`; a.textContent = "Open the case"; result.append(a); }
        files = [];
        return;
      }
      const err = answer.error || { message: `upload failed (${xhr.status})` };
      const named = err.details && (err.details.file || err.details.filename);
      let marked = false;
      files.forEach((f, i) => {
        const li = document.getElementById(`file-${i}`);
        if (named && f.name === named && li) { li.classList.add("failed"); li.querySelector(".note").textContent = err.message; marked = true; }
      });
      result.textContent = marked ? "One file was refused; nothing was created. Remove it and upload again." : `Nothing was created: ${err.message}`;
    });
    xhr.addEventListener("error", () => { result.textContent = "The connection failed; nothing was created. Try again."; });
    xhr.send(body);
  });
}

document.addEventListener("DOMContentLoaded", () => { liveCounts(); evidence(); shortcuts(); upload(); });
