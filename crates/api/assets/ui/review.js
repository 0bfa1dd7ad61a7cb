// The review desk's live parts: a claim renewed while its page is open, the correction form
// (opened from a field's Correct link or with `e`, a typed value previewed as the field's
// parser reads it, a box drawn on the page read by Ironclad before anything is saved).
// Pages work without this file: the Correct link opens the form for a typed value.
"use strict";

(() => {
  const csrf = () => document.querySelector("main")?.dataset.csrf || "";
  const post = (url, body) => fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRF-Token": csrf() },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

  // A claim is renewed every minute while its holder has the page open. The renewal is a
  // background call (the poll header): it keeps the claim, not the session, alive, so an idle
  // session still ends and the claim runs out after it. If someone took the claim over, or
  // the session ended, the page is shown again as it now stands.
  function renewClaim() {
    const desk = document.querySelector("#review-desk[data-renew]");
    if (!desk) return;
    const url = `/v1/cases/${encodeURIComponent(desk.dataset.case)}/claim`;
    setInterval(async () => {
      try {
        const r = await fetch(url, {
          method: "POST",
          headers: { Accept: "application/json", "X-CSRF-Token": csrf(), "X-Ironclad-Poll": "1" },
        });
        if (r.status === 409 || r.status === 401) window.location.reload();
      } catch (_) { /* offline for a moment: the claim lasts 15 minutes */ }
    }, 60 * 1000);
  }

  function corrections() {
    const panel = document.getElementById("correction");
    const form = document.getElementById("correction-form");
    if (!panel || !form) return;
    const $ = (id) => document.getElementById(id);
    const value = $("correction-value");
    const read = $("correction-read");
    const draw = $("correction-draw");
    const clear = $("correction-clear");
    const pageInput = $("correction-page");
    const bboxInput = $("correction-bbox");
    const caseId = form.dataset.case;
    // The document being corrected: its file and pages (a box must be drawn on one of them).
    let doc = null;
    form.querySelectorAll(".needs-script").forEach((el) => { el.hidden = false; });
    document.querySelectorAll("#correction .draw").forEach((el) => { el.hidden = false; });

    const say = (text, bad) => {
      read.textContent = text;
      read.classList.toggle("problem", !!bad);
    };
    const preview = async (body) => {
      if (!$("correction-segment").value) return;
      try {
        const r = await post(`/v1/cases/${encodeURIComponent(caseId)}/corrections/preview`, {
          segment: $("correction-segment").value, field: $("correction-field").value, ...body,
        });
        const answer = await r.json().catch(() => ({}));
        if (!r.ok) { say((answer.error && answer.error.message) || `could not read it (${r.status})`, true); return; }
        const where = body.box ? `Read in the box: “${answer.text || ""}”. ` : "";
        if (answer.problem) say(`${where}Saving would be refused: ${answer.problem}`, true);
        else say(`${where}It will be saved as ${answer.shown}${answer.kind ? ` (${answer.kind})` : ""}.`, false);
      } catch (_) { say("The preview could not be fetched; saving still checks the value.", true); }
    };

    const open = (link) => {
      doc = {
        source: link.dataset.source,
        first: Number(link.dataset.first),
        last: Number(link.dataset.last),
      };
      $("correction-segment").value = link.dataset.segment;
      $("correction-field").value = link.dataset.field;
      $("correction-label").textContent = link.dataset.label;
      $("correction-current").textContent = link.dataset.current || "(nothing)";
      value.value = "";
      pageInput.value = ""; bboxInput.value = "";
      clear.hidden = true;
      const problem = $("correction-problem"); if (problem) problem.remove();
      say("", false);
      panel.hidden = false;
      panel.scrollIntoView({ block: "nearest" });
      value.focus();
    };
    document.querySelectorAll("a.correct").forEach((link) => {
      link.addEventListener("click", (e) => { e.preventDefault(); open(link); });
    });
    // Opened by the server (a Correct link followed without script, or a refused save).
    if (!panel.hidden) {
      const link = document.querySelector(`a.correct[data-segment="${CSS.escape($("correction-segment").value)}"][data-field="${CSS.escape($("correction-field").value)}"]`);
      if (link) doc = { source: link.dataset.source, first: Number(link.dataset.first), last: Number(link.dataset.last) };
    }
    $("correction-cancel").addEventListener("click", () => { stopDrawing(); panel.hidden = true; });

    let typing = null;
    value.addEventListener("input", () => {
      if (bboxInput.value) { bboxInput.value = ""; pageInput.value = ""; clear.hidden = true; }
      clearTimeout(typing);
      const text = value.value;
      if (!text.trim()) { say("", false); return; }
      typing = setTimeout(() => preview({ value: text }), 350);
    });
    clear.addEventListener("click", () => {
      bboxInput.value = ""; pageInput.value = ""; clear.hidden = true;
      document.querySelectorAll(".sheet .drawn").forEach((d) => d.remove());
      say("", false); value.focus();
    });

    // Drawing a box: press on the page image and drag; the box's corners are kept as
    // fractions of the page.
    let drawing = false;
    let start = null;
    let shape = null;
    const sheets = () => Array.from(document.querySelectorAll("figure.page")).filter((f) => {
      const page = Number(f.dataset.page);
      return doc && f.dataset.source === doc.source && page >= doc.first && page <= doc.last;
    });
    function stopDrawing() {
      drawing = false;
      document.body.classList.remove("drawing-box");
      document.querySelectorAll("figure.page.drawable").forEach((f) => f.classList.remove("drawable"));
      draw.setAttribute("aria-pressed", "false");
    }
    draw.addEventListener("click", () => {
      if (!doc) return;
      if (drawing) { stopDrawing(); return; }
      drawing = true;
      document.body.classList.add("drawing-box");
      draw.setAttribute("aria-pressed", "true");
      const mine = sheets();
      mine.forEach((f) => f.classList.add("drawable"));
      say(`Drag a box around the value on ${mine.length > 1 ? "one of its pages" : "its page"}; Escape stops.`, false);
      if (mine[0]) mine[0].scrollIntoView({ block: "start", behavior: "smooth" });
    });
    document.addEventListener("keydown", (e) => { if (drawing && e.key === "Escape") { stopDrawing(); say("", false); } });
    const fraction = (sheet, e) => {
      const r = sheet.querySelector("img").getBoundingClientRect();
      const clamp = (v) => Math.min(1, Math.max(0, v));
      return { x: clamp((e.clientX - r.left) / r.width), y: clamp((e.clientY - r.top) / r.height) };
    };
    const place = (el, a, b) => {
      const x0 = Math.min(a.x, b.x), y0 = Math.min(a.y, b.y);
      el.style.left = `${x0 * 100}%`; el.style.top = `${y0 * 100}%`;
      el.style.width = `${Math.abs(b.x - a.x) * 100}%`; el.style.height = `${Math.abs(b.y - a.y) * 100}%`;
    };
    document.addEventListener("pointerdown", (e) => {
      if (!drawing) return;
      const figure = e.target.closest && e.target.closest("figure.page.drawable");
      if (!figure) return;
      e.preventDefault();
      const sheet = figure.querySelector(".sheet");
      document.querySelectorAll(".sheet .drawn").forEach((d) => d.remove());
      shape = document.createElement("div");
      shape.className = "drawn";
      sheet.append(shape);
      start = { sheet, figure, at: fraction(sheet, e) };
      place(shape, start.at, start.at);
    });
    document.addEventListener("pointermove", (e) => {
      if (!start) return;
      place(shape, start.at, fraction(start.sheet, e));
    });
    document.addEventListener("pointerup", (e) => {
      if (!start) return;
      const end = fraction(start.sheet, e);
      const a = start.at;
      const box = {
        page: Number(start.figure.dataset.page),
        x0: Math.min(a.x, end.x), y0: Math.min(a.y, end.y), x1: Math.max(a.x, end.x), y1: Math.max(a.y, end.y),
      };
      start = null;
      stopDrawing();
      if (box.x1 - box.x0 < 0.005 || box.y1 - box.y0 < 0.004) { shape.remove(); say("That box is too small: drag around the value.", true); return; }
      const round = (v) => Math.round(v * 10000) / 10000;
      pageInput.value = String(box.page);
      bboxInput.value = [box.x0, box.y0, box.x1, box.y1].map(round).join(",");
      clear.hidden = false;
      panel.scrollIntoView({ block: "nearest" });
      say("Reading the box…", false);
      preview({ box: { page: box.page, x0: round(box.x0), y0: round(box.y0), x1: round(box.x1), y1: round(box.y1) } });
    });

    // `e`: correct the field whose row has the focus (or the only field the page shows).
    document.addEventListener("keydown", (e) => {
      const t = e.target;
      if (e.key !== "e" || e.ctrlKey || e.metaKey || e.altKey) return;
      if (t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement) return;
      const row = t instanceof Element ? t.closest("tr") : null;
      const link = (row && row.querySelector("a.correct")) || (document.querySelectorAll("a.correct").length === 1 ? document.querySelector("a.correct") : null);
      if (!link) return;
      e.preventDefault();
      open(link);
    });
  }

  document.addEventListener("DOMContentLoaded", () => { renewClaim(); corrections(); });
})();
