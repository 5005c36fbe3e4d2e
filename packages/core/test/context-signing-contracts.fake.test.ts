import { createInMemoryRepositories } from '../src/testing/index.ts';
import { contextSigningSecretRepositoryContract } from '../src/testing/contracts/index.ts';

contextSigningSecretRepositoryContract('in-memory', async () => ({ repos: createInMemoryRepositories(), close: async () => {} }));
