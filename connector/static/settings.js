// The settings page's one script: copy buttons (the Clipboard API) and focus on an error
// message, so a keyboard or screen reader user lands on it; loaded as a file because
// the Content-Security-Policy allows no inline script. Everything works without it, too:
// values to copy sit in read-only fields that can be selected by hand.
"use strict";

function announce(text) {
  const status = document.getElementById("copy-status");
  if (status) {
    status.textContent = "";
    window.setTimeout(() => { status.textContent = text; }, 50);
  }
}

function markCopied(button) {
  const label = button.firstChild;
  const original = label.textContent;
  label.textContent = "Copied";
  button.classList.add("copied");
  window.setTimeout(() => {
    label.textContent = original;
    button.classList.remove("copied");
  }, 2000);
}

async function copyFrom(button) {
  const field = document.getElementById(button.dataset.copy);
  if (!field) {
    return;
  }
  try {
    await navigator.clipboard.writeText(field.value);
    markCopied(button);
    announce("Copied to the clipboard.");
  } catch (error) {
    field.focus();
    field.select();
    announce("Copying is not allowed here: the value is selected, press Ctrl+C or ⌘C.");
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const error = document.querySelector("main [role=alert]");
  if (error) {
    error.setAttribute("tabindex", "-1");  // focusable by script, not a tab stop
    error.focus();
  }
  for (const button of document.querySelectorAll("button.copy[data-copy]")) {
    button.addEventListener("click", () => copyFrom(button));
  }
});

// Moments are written in UTC (<time datetime="…">, the UTC value in its title): shown here in
// the reader's own time zone, the title keeping the UTC value on hover.
function showLocalTimes() {
  const format = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  for (const moment of document.querySelectorAll("time[datetime]")) {
    const parsed = new Date(moment.getAttribute("datetime"));
    if (!Number.isNaN(parsed.getTime())) {
      moment.textContent = format.format(parsed);
    }
  }
}

document.addEventListener("DOMContentLoaded", showLocalTimes);
