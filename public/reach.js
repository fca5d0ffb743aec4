// Registers the service worker on every page, and on the profile page turns push on in this browser:
// permission, a subscription under the instance's key, and the subscription saved for the signed-in person
// (with the page's CSRF token). docs/reach.md#push. The passkey buttons load /passkeys.js when first clicked.
if ("serviceWorker" in navigator) {
  navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => {});
}

// The passkey buttons (class passkey-only) show only where they can work: with JavaScript, in a browser that has
// WebAuthn's JSON helpers.
if (typeof PublicKeyCredential === "function" && typeof PublicKeyCredential.parseCreationOptionsFromJSON === "function") {
  document.documentElement.dataset.passkeys = "on";
}

function device() {
  const agent = navigator.userAgent;
  const browser = /Edg\//.test(agent) ? "Edge" : /Firefox\//.test(agent) ? "Firefox"
    : /Chrom(e|ium)\//.test(agent) ? "Chrome" : /Safari\//.test(agent) ? "Safari" : "A browser";
  const system = /Android/.test(agent) ? "Android" : /iPhone|iPad/.test(agent) ? "iOS"
    : /Mac OS X/.test(agent) ? "macOS" : /Windows/.test(agent) ? "Windows" : /Linux/.test(agent) ? "Linux" : "";
  return system ? `${browser} on ${system}` : browser;
}

function bytes(base64url) {
  const padded = (base64url + "===".slice((base64url.length + 3) % 4)).replace(/-/g, "+").replace(/_/g, "/");
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

async function turnOn(button, status) {
  const say = (text) => { status.textContent = text; };
  if (!("serviceWorker" in navigator) || !("PushManager" in window)) {
    say("This browser cannot take push messages. On an iPhone, add Anteroom to the home screen first.");
    return;
  }
  if ((await Notification.requestPermission()) !== "granted") {
    say("Notifications are blocked for this site; allow them in the browser's settings.");
    return;
  }
  try {
    const key = await (await fetch("/api/v1/push/key")).json();
    const registration = await navigator.serviceWorker.ready;
    const subscription = await registration.pushManager.subscribe({
      userVisibleOnly: true,
      applicationServerKey: bytes(key.public_key),
    });
    const response = await fetch("/api/v1/push/subscriptions", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": button.dataset.csrf || "" },
      body: JSON.stringify({ ...subscription.toJSON(), device: device() }),
    });
    if (!response.ok) {
      const reply = await response.json().catch(() => ({}));
      say(reply.message || `Anteroom refused the subscription (HTTP ${response.status}).`);
      return;
    }
    say("Push is on in this browser.");
    window.location.reload();
  } catch (error) {
    say(`Push could not be turned on here: ${error && error.message ? error.message : error}`);
  }
}

// A time-zone field left empty starts with this browser's zone.
for (const input of document.querySelectorAll("input[data-fill-time-zone]")) {
  if (!input.value) input.value = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
}

document.addEventListener("click", (event) => {
  const button = event.target instanceof Element ? event.target.closest("#push-on, #passkey-add, #passkey-sign-in") : null;
  if (!button) return;
  if (button.id === "push-on") {
    const status = document.getElementById("push-status");
    if (status) turnOn(button, status);
    return;
  }
  // Passkeys: their code is loaded on the first click only.
  const status = document.getElementById("passkey-status");
  if (!status) return;
  import("/passkeys.js")
    .then((passkeys) => (button.id === "passkey-add" ? passkeys.add(button, status) : passkeys.signIn(button, status)))
    .catch((error) => { status.textContent = `Passkeys could not load: ${error && error.message ? error.message : error}`; });
});
