import { createInMemoryRepositories } from '../src/testing/index.ts';
import { accountTokenRepositoryContract, addressProofRepositoriesContract, mailOutboxRepositoryContract, type MakeMailRepositories } from '../src/testing/contracts/index.ts';

const makeRepos: MakeMailRepositories = async () => ({ repos: createInMemoryRepositories(), close: async () => {} });

mailOutboxRepositoryContract(makeRepos);
accountTokenRepositoryContract(makeRepos);
addressProofRepositoriesContract(makeRepos);
