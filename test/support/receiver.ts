import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Delay before answering, in ms. */
  delayMs?: number;
}

/**
 * A local webhook receiver: records every request and answers with what `answer` says for it (by
 * default 204). Tests reach it on loopback with WEBHOOKS_ALLOW_PRIVATE on.
 */
export class TestReceiver {
  readonly requests: ReceivedRequest[] = [];
  answer: (req: ReceivedRequest, index: number) => Answer = () => ({ status: 204 });
  private server: Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => {
        body += d;
      });
      req.on('end', () => {
        const received = { headers: req.headers, body, at: Date.now() };
        const index = this.requests.push(received) - 1;
        const a = this.answer(received, index);
        const send = () => res.writeHead(a.status, a.headers).end(a.body ?? '');
        if (a.delayMs) setTimeout(send, a.delayMs);
        else send();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  /** The events of every request, in the order they arrived (a batch's events in its order). */
  eventIds(): string[] {
    return this.requests.flatMap((r) => {
      const body = JSON.parse(r.body) as { id?: string; events?: { id: string }[] };
      return body.events ? body.events.map((e) => e.id) : [body.id!];
    });
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
