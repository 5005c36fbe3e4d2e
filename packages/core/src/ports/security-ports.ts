/** One-way password hashing (bcrypt in the server). Kept behind a port so core stays pure. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** Constant-time in the hash's cost for both a match and a mismatch. */
  verify(password: string, hash: string): Promise<boolean>;
}
