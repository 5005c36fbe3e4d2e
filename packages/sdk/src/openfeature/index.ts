export { SwitchyardProvider, toSdkContext, type SwitchyardProviderOptions } from './provider.ts';
