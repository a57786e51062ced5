// The public library API: everything the CLI does is available from code.
export * from '../dialects/index.js'
export {openDb, withDb, describeDbError, type Db, type Queryable, type OpenOptions} from './db/index.js'
export {OutboxError, UsageError, ConnectionError, EXIT} from './core/errors.js'
export {DEFAULT_TABLES, resolveTables, validateIdentifier} from './schema/tables.js'
export {parseDuration, parseTimePoint, formatAge} from './core/time.js'
export {resolveUrl, resolveConnection, redactUrl, redactSecrets} from './config.js'
export {initPlan, applyInit, renderInitScript, PartitionMigrationNeeded, type InitResult, type InitOptions} from './schema/init.js'
export {PARTITION_INTERVALS} from './schema/partition-ranges.js'
export {listPartitions, partitionsAhead, PARTITIONS_ENDING_MS, type PartitionsReport, type PartitionInfo, type PartitionsAhead} from './ops/partitions.js'
export {ensurePartitions, type EnsureOptions, type EnsureResult} from './ops/partitions-ensure.js'
export {claimSql, markPublishedSql, retrySql, releaseSql} from './relay/sql-text.js'
export {claimBatch, markPublished, retryEvent, releaseLeases, type ClaimedEvent} from './relay/claim.js'
export {writeEvent, writeEventSync, notifyChannel, type NewEvent, type ProducerOptions} from './producer.js'
export {Consumer, type BatchItem, type BatchResult, type ConsumeOutcome, type ConsumerOptions, type InboxEvent, type TransactionOf} from './consumer.js'
export {serialisePayload, DIALECT_PAYLOAD_LIMIT, DEFAULT_MAX_PAYLOAD_BYTES, PayloadError} from './schema/payload.js'
export {uuidv7} from './core/uuid.js'
export type {Publisher, PublishResult} from './publishers/types.js'
// Relay and publishers (issue 3)
export {Relay, type RelayOptions, type RelayLogger, type DrainResult} from './relay/relay.js'
export {backoffDelay, DEFAULT_BACKOFF, type Backoff} from './relay/backoff.js'
export {RelayMetrics} from './relay/metrics.js'
export {defaultOwner} from './relay/owner.js'
export {createPublisher, PUBLISHER_NAMES, type PublisherName, type PublisherOptionsByName} from './publishers/index.js'
export {HttpPublisher, type HttpPublisherOptions, type CloudEventsMode} from './publishers/http.js'
export {StdoutPublisher, type StdoutPublisherOptions} from './publishers/stdout.js'
export {AmqpPublisher, type AmqpPublisherOptions} from './publishers/amqp.js'
export {NatsPublisher, type NatsPublisherOptions} from './publishers/nats.js'
export {RedisPublisher, type RedisPublisherOptions} from './publishers/redis.js'
export {claimOn} from './relay/claim.js'
export {verify, CHECKS as VERIFY_CHECKS} from './verify/run.js'
export type {CheckResult, CheckStatus, VerifyOptions, VerifyReport} from './verify/types.js'
export {runRelayService, type RelayServiceOptions, type RelayServiceResult} from './relay/service.js'
export {relayBacklog, type Backlog} from './relay/backlog.js'
export {createLogger, type LogFormat, type LoggerOptions} from './relay/logger.js'
export {serveMetrics, type MetricsServer} from './relay/metrics-server.js'
// chaos: the kill-at-each-step harness (`outbox chaos`)
export {STEPS, OTHER_FAILPOINTS, failpoint, armFailpoints, type Step, type ChaosStep} from './core/failpoints.js'
export {
  runChaos,
  parseBrokerUrl,
  SCENARIOS,
  SCENARIO_DESCRIPTIONS,
  type ChaosOptions,
  type ChaosReport,
  type ChaosProgress,
  type CaseSummary,
  type RunResult,
  type KillRecord,
  type ScenarioKind,
  type Verdict,
} from './chaos/runner.js'
export {ordersScenario, loadScenario, type Scenario, type ScenarioContext, type DeliveredEvent, type Intent} from './chaos/business-scenario.js'
export {STRATEGIES, CONSUMER_MODES, STRATEGY_DESCRIPTIONS, CONSUMER_DESCRIPTIONS, type Strategy, type ConsumerMode} from './chaos/strategies.js'
export {checkInvariants, INVARIANTS, type InvariantName, type Violation, type Observed} from './chaos/invariants.js'
export {LoopbackBroker, type LoopbackBrokerOptions, type BrokerStats, type CloudEvent} from './chaos/broker.js'
export {renderJunit} from './render/junit.js'
export {renderChaosReport} from './render/chaos.js'
export {databaseNow} from './ops/query.js'
export {readStatus, statusStatements, statusRowsRead, type StatusStatements, type StatusReport, type StatusFigures, type TypeStatus, type StatusOptions, type LatencySeconds} from './ops/status.js'
export {checkThresholds, type Thresholds, type Breach} from './ops/thresholds.js'
export {renderPrometheus} from './render/prometheus.js'
export {listFailed, showEvent, type FailedFilter, type FailedList, type ShownEvent} from './ops/failed.js'
export {replay, planReplay, checkSelection, type ReplaySelection, type ReplayOptions, type ReplayPlan, type ReplayResult, type ReplayOutput} from './ops/replay.js'
export {archive, planArchive, DEFAULT_MIN_PUBLISHED_AGE_MS, type ArchiveOptions, type ArchivePlan, type ArchiveResult, type ArchiveOutput} from './ops/archive.js'
export type {StoredEvent, EventState, SampleEvent} from './ops/events.js'
export type {Progress} from './ops/batches.js'
// consume: the message contract read back (schemas/envelope.schema.json) and the runtimes
export {MessageDecodeError, type ConsumedEvent} from './consume/event.js'
export {decodeAmqp, decodeNats, decodeRedis, decodeEnvelope, OUTBOX_HEADER, type AmqpMessageLike, type NatsMessageLike} from './consume/decode.js'
export {decodeCloudEvent, cloudEventMode, type HttpHeaders, type HttpRequestLike} from './consume/cloudevents.js'
export {runLoop, DEFAULT_MAX_ATTEMPTS, DEFAULT_RETRY_DELAY_MS, type EventHandler, type Delivery, type DeliverySource, type LoopOptions, type ConsumeSummary} from './consume/loop.js'
export {DEFAULT_MAX_BATCH, type RuntimeOptions} from './consume/runtime.js'
export {consumeAmqp, type AmqpConsumeOptions} from './consume/amqp.js'
export {consumeNats, type NatsConsumeOptions} from './consume/nats.js'
export {consumeRedis, type RedisConsumeOptions} from './consume/redis.js'
export {createHttpReceiver, type HttpReceiver, type HttpReceiverOptions, type HttpAnswer} from './consume/http.js'
export {serveHttp, type HttpServeOptions} from './consume/http-server.js'
