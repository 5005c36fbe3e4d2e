import { createInMemoryRepositories } from '../src/testing/index.ts';
import { scheduledChangeRepositoryContract } from '../src/testing/contracts/index.ts';

scheduledChangeRepositoryContract('in-memory', async () => ({ repos: createInMemoryRepositories(), close: async () => {} }));
