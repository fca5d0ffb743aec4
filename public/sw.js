// Anteroom's service worker (docs/reach.md#push), served as /sw.js with scope /.
//
// - Fingerprinted bundle files (/pkg/NAME-HASH.js, _bg.wasm, .css) never change under their name: kept in a
//   cache once fetched. Pages and everything else always come from the network.
// - `push`: a question's message shows a notification (tagged with the question, so a later message
//   replaces or closes it); a `close` message closes it.
// - `notificationclick`: a button posts its single-use answer token to /answer/{token} (never a GET) and
//   shows what happened; a tap elsewhere opens the question's page.

const ASSETS = "anteroom-assets-v1";
const FINGERPRINTED = /^\/pkg\/[A-Za-z0-9_.-]+-[0-9A-Za-z]{8,}(?:_bg\.wasm|\.js|\.css)$/;

self.addEventListener("install", () => self.skipWaiting());

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      const names = await caches.keys();
      await Promise.all(names.filter((name) => name !== ASSETS).map((name) => caches.delete(name)));
      await self.clients.claim();
    })(),
  );
});

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== self.location.origin) return;
  if (!FINGERPRINTED.test(url.pathname)) return;
  event.respondWith(
    (async () => {
      const cache = await caches.open(ASSETS);
      const kept = await cache.match(event.request);
      if (kept) return kept;
      const response = await fetch(event.request);
      if (response.ok) await cache.put(event.request, response.clone());
      return response;
    })(),
  );
});

self.addEventListener("push", (event) => {
  let message;
  try {
    message = event.data ? event.data.json() : null;
  } catch {
    message = null;
  }
  if (message && typeof message === "object") event.waitUntil(shown(message));
});

async function shown(message) {
  const tag = String(message.tag || "");
  if (message.kind === "close") {
    const open = await self.registration.getNotifications({ tag });
    open.forEach((notification) => notification.close());
    return;
  }
  if (message.kind !== "question") return;
  const buttons = Array.isArray(message.actions) ? message.actions : [];
  const room = self.Notification && Notification.maxActions ? Notification.maxActions : 2;
  const tokens = {};
  buttons.forEach((button) => {
    tokens[String(button.action)] = String(button.token);
  });
  await self.registration.showNotification(String(message.title || "A question waits for you"), {
    body: String(message.body || ""),
    tag,
    renotify: true,
    requireInteraction: true,
    icon: "/favicon.svg",
    data: { url: String(message.url || "/"), tokens },
    actions: buttons.slice(0, room).map((button) => ({ action: String(button.action), title: String(button.title) })),
  });
}

self.addEventListener("notificationclick", (event) => event.waitUntil(clicked(event.notification, event.action)));

// What a tap does: a button answers with its token, the rest opens the question's page.
async function clicked(notification, action) {
  const data = notification.data || {};
  notification.close();
  const token = action && data.tokens ? data.tokens[action] : null;
  return token ? answered(token, notification) : opened(data.url || "/");
}

async function answered(token, notification) {
  let reply = {};
  try {
    const response = await fetch("/answer/" + encodeURIComponent(token), {
      method: "POST",
      headers: { Accept: "application/json" },
      credentials: "omit",
    });
    reply = await response.json();
  } catch {
    reply = { title: "Not answered", message: "Anteroom could not be reached; open the question instead." };
  }
  await self.registration.showNotification(String(reply.title || "Anteroom"), {
    body: String(reply.message || ""),
    tag: notification.tag,
    data: { url: (notification.data && notification.data.url) || "/", tokens: {} },
  });
}

async function opened(url) {
  const target = new URL(url, self.location.origin);
  // Only this Anteroom's own pages.
  if (target.origin !== self.location.origin) return;
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  for (const client of windows) {
    if (new URL(client.url).pathname === target.pathname && "focus" in client) return client.focus();
  }
  return self.clients.openWindow(target.href);
}
