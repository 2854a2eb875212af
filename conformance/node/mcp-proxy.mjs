// A small local proxy for tools that cannot send a bearer token (the
// official MCP conformance runner): it forwards every request to faxhub's
// /mcp unchanged except for an added `Authorization: Bearer <token>`, and
// streams the answer back. It listens on 127.0.0.1 only.
import http from 'node:http';

export function startBearerProxy(target, token) {
  const t = new URL(target);
  const upstream = new Set(); // in-flight upstream requests (listen streams stay open)
  const server = http.createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    delete headers.host;
    delete headers.connection;
    const up = http.request({ hostname: t.hostname, port: t.port, method: req.method, path: t.pathname + (new URL(req.url, 'http://x').search), headers: { ...headers, host: t.host } }, (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    });
    upstream.add(up);
    up.on('close', () => upstream.delete(up));
    res.on('close', () => up.destroy());
    up.on('error', (err) => { res.writeHead(502, { 'content-type': 'text/plain' }); res.end(`proxy: ${err.message}`); });
    req.pipe(up);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    resolve({ url: `http://127.0.0.1:${server.address().port}/mcp`, close: () => new Promise((r) => {
      for (const up of upstream) up.destroy();
      server.close(() => r());
      server.closeAllConnections();
    }) });
  }));
}
