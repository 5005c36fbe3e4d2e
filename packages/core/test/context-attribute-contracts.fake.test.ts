import { createInMemoryRepositories } from '../src/testing/index.ts';
import { contextAttributeRepositoryContract } from '../src/testing/contracts/index.ts';

contextAttributeRepositoryContract('in-memory', async () => ({ repos: createInMemoryRepositories(), close: async () => {} }));
