import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { isDataException } from '@switchyard/postgres';
import { toGrpcError } from '../src/grpc/grpc-errors.ts';
import { createHttpApp } from '../src/http/app.ts';
import { createLogger } from '../src/logging.ts';

/**
 * The backstop of docs/security.md "Input rules": a value PostgreSQL refuses (SQLSTATE class 22)
 * is the caller's mistake, 400 / INVALID_ARGUMENT, never a 500 — and neither the statement nor
 * the value reaches the answer. The error is shaped as postgres.js raises it (a PostgresError with
 * the SQLSTATE in `code`, the server's message quoting the value, the query attached).
 */
function postgresError(code: string): Error {
  return Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00 near secret-value'), {
    name: 'PostgresError',
    code,
    severity: 'ERROR',
    query: 'insert into flags (key) values ($1)',
    parameters: ['secret-value'],
  });
}

function capturedLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(String(chunk));
      callback();
    },
  });
  return { lines, logging: createLogger({ filter: 'debug', json: true, destination }) };
}

describe('isDataException', () => {
  test('is true for SQLSTATE class 22 only', () => {
    for (const code of ['22021', '22P02', '22P05', '22003', '22001', '22007', '22023']) assert.equal(isDataException(postgresError(code)), true, code);
    for (const code of ['23505', '42P01', '08006', '57P01', 'ECONNRESET', 'FST_ERR_BAD_URL', '2202', '220211']) assert.equal(isDataException(postgresError(code)), false, code);
    assert.equal(isDataException(new Error('no code')), false);
    assert.equal(isDataException(null), false);
  });
});

describe('REST: a data exception is 400 INVALID_ARGUMENT', () => {
  test('answers {error, code} without SQL or the value, and logs a warning naming the route', async () => {
    const { lines, logging } = capturedLogger();
    const app = createHttpApp(logging.forModule('http'));
    app.post('/v1/things/:thing_id', async () => {
      throw postgresError('22021');
    });
    app.get('/v1/broken', async () => {
      throw postgresError('42P01');
    });
    const answer = await app.inject({ method: 'POST', url: '/v1/things/t1', payload: { name: 'x' } });
    assert.equal(answer.statusCode, 400, answer.body);
    const body = answer.json();
    assert.deepEqual(Object.keys(body).sort(), ['code', 'error']);
    assert.equal(body.code, 'INVALID_ARGUMENT');
    assert.doesNotMatch(answer.body, /secret-value|insert|UTF8|0x00/);
    const warning = lines.map((line) => JSON.parse(line)).find((line) => line.msg === 'the database refused a value of the request');
    assert.ok(warning, lines.join(''));
    assert.equal(warning.level, 40, 'warn');
    assert.equal(warning.route, '/v1/things/:thing_id');
    assert.equal(warning.method, 'POST');
    assert.equal(warning.sqlState, '22021');
    assert.doesNotMatch(JSON.stringify(warning), /secret-value/);

    // Anything else PostgreSQL says is still the server's fault.
    const broken = await app.inject({ method: 'GET', url: '/v1/broken' });
    assert.equal(broken.statusCode, 500);
    assert.deepEqual(broken.json(), { error: 'internal error', code: 'INTERNAL' });
    await app.close();
  });
});

describe('gRPC: a data exception is INVALID_ARGUMENT', () => {
  test('with a fixed message, logged at warn with the method', () => {
    const { lines, logging } = capturedLogger();
    const status = toGrpcError(postgresError('22P05'), logging.forModule('grpc'), '/svc.flags.v1.FlagService/MutateFlag');
    assert.equal(status.code, grpc.status.INVALID_ARGUMENT);
    assert.doesNotMatch(status.details ?? '', /secret-value|insert|UTF8/);
    const warning = JSON.parse(lines.find((line) => line.includes('the database refused a value'))!);
    assert.equal(warning.level, 40);
    assert.equal(warning.method, '/svc.flags.v1.FlagService/MutateFlag');
    assert.equal(toGrpcError(postgresError('42P01'), logging.forModule('grpc')).code, grpc.status.INTERNAL);
  });
});
