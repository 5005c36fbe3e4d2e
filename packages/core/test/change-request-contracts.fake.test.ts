import { createInMemoryRepositories } from '../src/testing/index.ts';
import { changeRequestRepositoryContract } from '../src/testing/contracts/index.ts';

changeRequestRepositoryContract('in-memory', async () => ({ repos: createInMemoryRepositories(), close: async () => {} }));
