/**
 * The answer, on REST and gRPC alike, when PostgreSQL refuses a value of a request (SQLSTATE class
 * 22, `isDataException` in packages/postgres/src/pg-errors.ts). Fixed text: the driver's own
 * message may quote the value or the statement, and neither belongs in a response.
 */
export const INPUT_REFUSED_BY_DATABASE = 'a value in the request cannot be stored (the database refused it)';
