export { MemoryBankClient } from "./client.js";
export type {
  AutoRecallOptions,
  ClientOptions,
  CountOptions,
  EventOptions,
  ExportDocument,
  HistoryEvent,
  ImportResult,
  ListOptions,
  Me,
  Memory,
  MemoryEvent,
  RecentOptions,
  RequestOptions,
  SaveItem,
  SaveOptions,
  SaveResult,
  SearchHit,
  SearchOptions,
  Thread,
  ToolFormat,
} from "./client.js";
export {
  Conflict,
  MemoryBankError,
  NotFound,
  PermissionDenied,
  ProviderError,
  RateLimited,
  StoreError,
  ValidationError,
} from "./errors.js";
export { aiSdkTools, openAITools, runOpenAIToolCalls } from "./tools.js";
export type {
  AISdkTool,
  AISdkToolOptions,
  JSONSchemaObject,
  OpenAITool,
  OpenAIToolCall,
  OpenAIToolMessage,
  ToolOptions,
} from "./tools.js";
export type { components, operations, paths } from "./schema.js";
