// Network access as the node uses it: fetches bounded in size and time.
export { DEFAULT_TRANSFER, DownloadError, fetchFailureReason, guardedFetch, type TransferLimits } from './guarded-fetch.ts';
export { credentialed, withUserInfoOf } from './url-credentials.ts';
