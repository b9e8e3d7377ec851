/**
 * A BidiRoute as a grpc-js service: messages pass through as bytes (the route decodes them, so a malformed
 * one is answered as the route chooses, not as grpc-js's INTERNAL), the status the route ends with is sent
 * in the trailers.
 */
import * as grpc from '@grpc/grpc-js';
import { MAX_UNREAD_MESSAGES, NOT_READING, type BidiCall, type BidiHandlers, type BidiRoute } from './bidi-route.js';

export function bidiGrpcService(routes: ReadonlyMap<string, BidiRoute>): { definition: grpc.ServiceDefinition; handlers: grpc.UntypedServiceImplementation } {
  const definition: Record<string, grpc.MethodDefinition<Buffer, Uint8Array>> = {};
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const [path, route] of routes) {
    const name = path.slice(path.lastIndexOf('/') + 1);
    definition[name] = {
      path,
      requestStream: true,
      responseStream: true,
      requestSerialize: (b: Buffer) => b,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength),
      responseDeserialize: (b: Buffer) => b,
    };
    const handler: grpc.handleBidiStreamingCall<Buffer, Uint8Array> = (call) => {
      let over = false;
      let unread = 0;
      const peer = call.getPeer();
      let h: BidiHandlers | undefined = undefined; // set once route() returns; end() may come before
      const bidi: BidiCall = {
        write: (message: Uint8Array) => {
          if (over) return;
          // Written answers whose write has not completed: held by HTTP/2 flow control while the client does not read.
          if (unread >= MAX_UNREAD_MESSAGES) return bidi.end(grpc.status.RESOURCE_EXHAUSTED, NOT_READING);
          unread++;
          call.write(message, () => unread--);
        },
        end: (code = grpc.status.OK, details = '') => {
          if (over) return;
          over = true;
          h?.closed();
          if (code === (grpc.status.OK as number)) call.end();
          else call.emit('error', { code, details });
        },
        connection: peer,
        peer,
      };
      h = route(bidi);
      if (over) h.closed(); // ended before its handlers existed (a refusal)
      const closed = () => {
        if (over) return;
        over = true;
        h.closed();
      };
      call.on('data', (bytes: Buffer) => {
        if (over) return;
        const max = route.maxMessageBytes;
        if (max !== undefined && bytes.length > max) bidi.end(grpc.status.RESOURCE_EXHAUSTED, `Received message larger than max (${bytes.length} vs. ${max})`);
        else h.message(bytes);
      });
      call.on('end', () => {
        if (!over) h.halfClose();
      });
      call.on('cancelled', closed);
      call.on('close', closed);
      call.on('error', closed);
    };
    handlers[name] = handler as grpc.UntypedHandleCall;
  }
  return { definition, handlers };
}
