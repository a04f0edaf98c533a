// An app that logs with pino and never writes personal data or secrets.

import { pinoRedaction } from "@loopguard/redact";
import pino from "pino";

export function createApp(destination = process.stdout) {
  const logger = pino({ ...pinoRedaction() }, destination);
  return {
    signup(request) {
      const log = logger.child({ requestId: request.id, ip: request.ip });
      log.info({ email: request.email, password: request.password }, `signup for ${request.email}`);
      log.error(new Error(`welcome mail to ${request.email} failed`));
    },
  };
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split("/").pop())) {
  createApp().signup({ id: "r1", ip: "203.0.113.9", email: "jane@acme.io", password: "hunter2" });
}
