// Passkeys (docs/operations.md#passkeys): adds one on the profile page and signs in with one on the sign-in
// page, through the browser's own WebAuthn JSON helpers. /reach.js loads this file on the first click of either
// button, so no page pays for it before then.

function supported() {
  return typeof PublicKeyCredential === "function"
    && typeof PublicKeyCredential.parseCreationOptionsFromJSON === "function"
    && typeof PublicKeyCredential.parseRequestOptionsFromJSON === "function";
}

async function post(url, body, csrf) {
  const headers = { "Content-Type": "application/json" };
  if (csrf) headers["X-CSRF-Token"] = csrf;
  const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body), credentials: "same-origin" });
  const reply = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(reply.message || `Anteroom refused (HTTP ${response.status}).`);
  return reply;
}

function reason(error) {
  // The person closed the browser's prompt, or it timed out: nothing went wrong on Anteroom's side.
  if (error && error.name === "NotAllowedError") return "No passkey was used (the prompt was closed or timed out).";
  if (error && error.name === "InvalidStateError") return "This device already holds a passkey for you here.";
  return error && error.message ? error.message : String(error);
}

export async function add(button, status) {
  const say = (text) => { status.textContent = text; };
  if (!supported()) return say("This browser cannot make passkeys; use a current Chrome, Edge, Firefox or Safari.");
  const csrf = button.dataset.csrf || "";
  button.disabled = true;
  try {
    const options = await post("/profile/passkeys/start", {}, csrf);
    const credential = await navigator.credentials.create({
      publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options),
    });
    const name = (document.getElementById("passkey-name") || {}).value || "";
    const reply = await post("/profile/passkeys/finish", { name, credential: credential.toJSON() }, csrf);
    say(reply.message || "Passkey added.");
    window.location.reload();
  } catch (error) {
    say(reason(error));
  } finally {
    button.disabled = false;
  }
}

export async function signIn(button, status) {
  const say = (text) => { status.textContent = text; };
  if (!supported()) return say("This browser cannot use passkeys; sign in another way.");
  button.disabled = true;
  try {
    const options = await post("/auth/passkeys/start", {});
    const credential = await navigator.credentials.get({
      publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options),
    });
    const reply = await post("/auth/passkeys/finish", { credential: credential.toJSON(), next: button.dataset.next || "/" });
    window.location.assign(reply.next || "/");
  } catch (error) {
    say(reason(error));
    button.disabled = false;
  }
}
