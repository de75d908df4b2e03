// tinyrps serve: the page. Plain JavaScript, no build step; talks to /api only.
"use strict";

const $ = (id) => document.getElementById(id);
const LABELS = ["rock", "paper", "scissors"];
const VERDICT = { win: "You win", lose: "You lose", tie: "Tie" };
const HISTORY_KEPT = 100;
// The drawing goes to the server at this size: the reader fits the letter into 80x80 px
// (images.FIT_BOX x SUPERSAMPLE) before it reduces it to the model's 28x28, and a letter drawn
// across the pad spans about 90 of these pixels. More would only cost reading time.
const UPLOAD_SIDE = 128;

// One id per browser tab: the server keeps each tab's score and opponents under it.
function tabId() {
  let id = sessionStorage.getItem("tinyrps-tab");
  if (!id) {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    id = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    sessionStorage.setItem("tinyrps-tab", id);
  }
  return id;
}

// ── drawing ──────────────────────────────────────────────────────────────
const canvas = $("canvas");
const ctx = canvas.getContext("2d");
let drawn = false;
let stroke = null;          // the pointer drawing now, and its last point

function clearPad() {
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  drawn = false;
}

function padPoint(event) {
  const box = canvas.getBoundingClientRect();
  return [(event.clientX - box.left) * canvas.width / box.width,
          (event.clientY - box.top) * canvas.height / box.height];
}

function penDown(event) {
  if (event.button !== undefined && event.button > 0) return;
  event.preventDefault();
  canvas.setPointerCapture(event.pointerId);
  const [x, y] = padPoint(event);
  stroke = { id: event.pointerId, x, y };
  ctx.strokeStyle = "#000";
  ctx.fillStyle = "#000";
  ctx.lineWidth = canvas.width / 20;
  ctx.lineCap = "round";
  ctx.lineJoin = "round";
  ctx.beginPath();
  ctx.arc(x, y, ctx.lineWidth / 2, 0, 2 * Math.PI);
  ctx.fill();
  drawn = true;
}

function penMove(event) {
  if (!stroke || event.pointerId !== stroke.id) return;
  event.preventDefault();
  const events = event.getCoalescedEvents ? event.getCoalescedEvents() : [];
  for (const e of events.length ? events : [event]) {
    const [x, y] = padPoint(e);
    ctx.beginPath();
    ctx.moveTo(stroke.x, stroke.y);
    ctx.lineTo(x, y);
    ctx.stroke();
    stroke.x = x;
    stroke.y = y;
  }
}

function penUp(event) {
  if (stroke && event.pointerId === stroke.id) stroke = null;
}

canvas.addEventListener("pointerdown", penDown);
canvas.addEventListener("pointermove", penMove);
canvas.addEventListener("pointerup", penUp);
canvas.addEventListener("pointercancel", penUp);

// A picture shown on the pad (a photo chosen, dropped or taken), fitted inside it.
function showOnPad(source, width, height) {
  clearPad();
  const scale = Math.min(canvas.width / width, canvas.height / height);
  const w = width * scale, h = height * scale;
  ctx.drawImage(source, (canvas.width - w) / 2, (canvas.height - h) / 2, w, h);
  drawn = true;
}

// ── playing ──────────────────────────────────────────────────────────────
let busy = false;
let answers = 0;            // moves answered (played or refused): document.body.dataset.answers

function setBusy(on) {
  busy = on;
  for (const id of ["play", "snap"]) $(id).disabled = on;
}

function say(text) { $("status").textContent = text; }

function showError(text) {
  $("error").hidden = !text;
  $("error").textContent = text || "";
}

async function play(blob, name) {
  if (busy) return;
  setBusy(true);
  showError("");
  const program = $("program").value;
  say(`Playing on ${$("program").selectedOptions[0]?.textContent || program}…`);
  // The file's name goes in the query, percent-encoded: a header carries Latin-1 only (石头.png).
  const query = new URLSearchParams({ program, opponent: $("opponent").value, tab: tabId(), name });
  try {
    const response = await fetch(`/api/play?${query}`, {
      method: "POST", body: blob, headers: { "Content-Type": blob.type || "application/octet-stream" },
    });
    let answer;
    try { answer = await response.json(); } catch { answer = { error: `the server answered ${response.status}` }; }
    if (!response.ok) {
      notPlayed(answer.error || `the server answered ${response.status}`);
      return;
    }
    showAnswer(answer);
  } catch (e) {
    notPlayed(`The server could not be reached (${e.message}).`);
  } finally {
    setBusy(false);
    document.body.dataset.answers = String(++answers);
  }
}

// A move refused: its error, and none of the previous round's result beside the new picture.
function notPlayed(text) {
  clearResult();
  showError(text);
  say("That move was not played.");
}

function clearResult() {
  $("players").hidden = true;
  for (const id of ["you-image", "opponent-image"]) $(id).removeAttribute("src");
  $("outcome").textContent = "";
  $("outcome").className = "outcome";
  $("notice").hidden = true;
  $("notice").textContent = "";
  $("figures").replaceChildren();
}

function playDrawing() {
  if (!drawn) {
    say("Draw a letter first: R, P or S.");
    return;
  }
  const upload = document.createElement("canvas");
  upload.width = upload.height = UPLOAD_SIDE;
  const g = upload.getContext("2d");
  g.imageSmoothingEnabled = true;
  g.imageSmoothingQuality = "high";
  g.drawImage(canvas, 0, 0, UPLOAD_SIDE, UPLOAD_SIDE);
  window.tinyrpsLastUpload = upload.toDataURL("image/png");   // what was sent, for a test to compare
  upload.toBlob((blob) => play(blob, "drawing.png"), "image/png");
}

function bars(container, probabilities, best) {
  container.replaceChildren();
  for (const label of LABELS) {
    const p = probabilities[label];
    const row = document.createElement("div");
    row.className = "bar";
    const name = document.createElement("span");
    name.textContent = label;
    const track = document.createElement("span");
    track.className = "track";
    track.setAttribute("role", "meter");
    track.setAttribute("aria-valuemin", "0");
    track.setAttribute("aria-valuemax", "100");
    track.setAttribute("aria-valuenow", (100 * p).toFixed(1));
    track.setAttribute("aria-label", `${label} probability`);
    const fill = document.createElement("span");
    fill.className = "fill";
    fill.style.width = `${(100 * p).toFixed(1)}%`;
    if (label !== best) fill.style.opacity = "0.45";
    track.append(fill);
    const pct = document.createElement("span");
    pct.className = "pct";
    pct.textContent = `${(100 * p).toFixed(1)}%`;
    row.append(name, track, pct);
    container.append(row);
  }
}

function scoreLine(score) {
  return `Score: you ${score.win} – ${score.lose} opponent (${score.tie} tie${score.tie === 1 ? "" : "s"})`;
}

function showAnswer(a) {
  $("players").hidden = false;
  const you = a.you;
  $("you-image").src = you.image;
  $("you-image").alt = `The 28 by 28 image the model saw of your move, read as ${you.label || "no letter"}`;
  $("you-label").textContent = you.letter_found
    ? `${you.label} (${(100 * you.confidence).toFixed(1)}%)` : "no letter found";
  bars($("you-bars"), you.probabilities, you.label);
  const outcome = $("outcome");
  if (a.opponent) {
    const o = a.opponent;
    $("opponent-move").hidden = false;
    $("opponent-image").src = o.image;
    $("opponent-image").alt = `The opponent's move, ${o.move}, as the renderer drew it`;
    $("opponent-played").textContent = o.move;
    $("opponent-label").textContent = `${o.label} (${(100 * o.confidence).toFixed(1)}%)`;
    bars($("opponent-bars"), o.probabilities, o.label);
    outcome.textContent = `${you.label} vs ${o.label}: ${VERDICT[a.outcome]}`;
    outcome.className = `outcome ${a.outcome}`;
    say(`Round ${a.round} played against the ${o.strategy} opponent.`);
    addHistory({ round: a.round, you: you.label, opponent: o.label, outcome: a.outcome, device: a.program.target });
  } else {
    $("opponent-move").hidden = true;
    outcome.textContent = "No letter found: draw a big R, P or S, or try another picture.";
    outcome.className = "outcome";
    say("No round was played.");
  }
  $("notice").hidden = !a.notice;
  $("notice").textContent = a.notice || "";
  $("runs-on").textContent = a.runs_on || a.program.label;
  const figures = $("figures");
  figures.replaceChildren();
  for (const f of a.figures) {
    const dt = document.createElement("dt");
    dt.textContent = f.name;
    const dd = document.createElement("dd");
    dd.textContent = f.value;
    const note = document.createElement("div");
    note.className = "note";
    note.textContent = f.note;
    dd.append(note);
    figures.append(dt, dd);
  }
  $("score").textContent = scoreLine(a.score);
}

// ── history (kept per tab, like the score) ───────────────────────────────
function loadHistory() {
  try { return JSON.parse(sessionStorage.getItem("tinyrps-history") || "[]"); } catch { return []; }
}

function renderHistory(rows) {
  const body = $("history").tBodies[0];
  body.replaceChildren();
  for (const r of rows.slice().reverse()) {
    const tr = document.createElement("tr");
    for (const [key, text] of [["round", r.round], ["you", r.you], ["opponent", r.opponent],
                               ["outcome", VERDICT[r.outcome]], ["device", r.device]]) {
      const td = document.createElement("td");
      td.textContent = text;
      if (key === "outcome") td.className = r.outcome;
      tr.append(td);
    }
    body.append(tr);
  }
}

function addHistory(row) {
  const rows = loadHistory();
  rows.push(row);
  const kept = rows.slice(-HISTORY_KEPT);
  sessionStorage.setItem("tinyrps-history", JSON.stringify(kept));
  renderHistory(kept);
}

async function newGame() {
  const response = await fetch(`/api/new-game?${new URLSearchParams({ tab: tabId() })}`, { method: "POST" });
  if (response.ok) {
    sessionStorage.removeItem("tinyrps-history");
    renderHistory([]);
    $("score").textContent = scoreLine((await response.json()).score);
    say("New game: the score is back to zero.");
  }
}

// ── pictures: a file, a drop, the camera ─────────────────────────────────
function playFile(file) {
  if (!file) return;
  const url = URL.createObjectURL(file);
  const img = new Image();
  img.onload = () => { showOnPad(img, img.naturalWidth, img.naturalHeight); URL.revokeObjectURL(url); };
  img.onerror = () => URL.revokeObjectURL(url);
  img.src = url;
  play(file, file.name || "photo");
}

$("choose").addEventListener("click", () => $("file").click());
$("file").addEventListener("change", () => { playFile($("file").files[0]); $("file").value = ""; });

const pad = $("pad");
pad.addEventListener("dragover", (e) => { e.preventDefault(); pad.classList.add("dropping"); });
pad.addEventListener("dragleave", () => pad.classList.remove("dropping"));
pad.addEventListener("drop", (e) => {
  e.preventDefault();
  pad.classList.remove("dropping");
  playFile(e.dataTransfer.files[0]);
});

let stream = null;
const video = $("video");

async function toggleCamera() {
  if (stream) { stopCamera(); return; }
  try {
    stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: "environment" }, audio: false });
  } catch (e) {
    showError(`The camera is not available (${e.message}).`);
    return;
  }
  video.srcObject = stream;
  video.hidden = false;
  await video.play();
  $("snap").hidden = false;
  $("camera").textContent = "Stop camera";
}

function stopCamera() {
  for (const track of stream ? stream.getTracks() : []) track.stop();
  stream = null;
  video.hidden = true;
  $("snap").hidden = true;
  $("camera").textContent = "Camera";
}

function snap() {
  const shot = document.createElement("canvas");
  shot.width = video.videoWidth;
  shot.height = video.videoHeight;
  shot.getContext("2d").drawImage(video, 0, 0);
  showOnPad(shot, shot.width, shot.height);
  stopCamera();
  shot.toBlob((blob) => play(blob, "camera.jpg"), "image/jpeg", 0.92);
}

if (navigator.mediaDevices && navigator.mediaDevices.getUserMedia) {
  $("camera").hidden = false;
  $("camera").addEventListener("click", toggleCamera);
  $("snap").addEventListener("click", snap);
}

// ── start ────────────────────────────────────────────────────────────────
async function start() {
  clearPad();
  renderHistory(loadHistory());
  $("clear").addEventListener("click", () => { clearPad(); say("Draw a letter and press Play."); });
  $("play").addEventListener("click", playDrawing);
  $("new-game").addEventListener("click", newGame);
  const saved = sessionStorage.getItem("tinyrps-opponent");
  if (saved) $("opponent").value = saved;
  $("opponent").addEventListener("change", () => sessionStorage.setItem("tinyrps-opponent", $("opponent").value));
  try {
    const response = await fetch("/api/programs");
    const info = await response.json();
    const select = $("program");
    for (const p of info.programs) {
      const option = document.createElement("option");
      option.value = p.id;
      option.textContent = p.label;
      select.append(option);
    }
    select.value = sessionStorage.getItem("tinyrps-program") || info.default;
    if (!select.value) select.value = info.default;
    select.addEventListener("change", () => sessionStorage.setItem("tinyrps-program", select.value));
    document.body.dataset.ready = "true";
  } catch (e) {
    showError(`The server could not be reached (${e.message}).`);
  }
}

start();
