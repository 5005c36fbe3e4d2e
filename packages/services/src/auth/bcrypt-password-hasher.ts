import bcrypt from 'bcryptjs';
import type { PasswordHasher } from '@switchyard/core';

/** bcrypt cost 10: about 70 ms per hash in pure JS on these machines, the OWASP minimum. */
const BCRYPT_COST = 10;

export class BcryptPasswordHasher implements PasswordHasher {
  constructor(private readonly cost = BCRYPT_COST) {}

  hash(password: string): Promise<string> {
    return bcrypt.hash(password, this.cost);
  }

  verify(password: string, hash: string): Promise<boolean> {
    return bcrypt.compare(password, hash);
  }
}
