import { createInMemoryRepositories } from '../src/testing/index.ts';
import { ssoRepositoriesContract, type MakeSsoRepositories } from '../src/testing/contracts/index.ts';

// Each suite gets a fresh state, as each PostgreSQL suite gets a fresh database.
const makeRepos: MakeSsoRepositories = async () => ({ repos: createInMemoryRepositories(), close: async () => {} });

ssoRepositoriesContract('in-memory', makeRepos);
