// Real brokers (RabbitMQ over AMQP, NATS JetStream) between the relay's publishers and the consumer.
import {UsageError} from '../errors.js'
import type {Publisher} from '../publishers/types.js'
import type {BrokerSpec, MessageSource} from './transport.js'

export async function brokerPublisher(spec: BrokerSpec, _prefix: string): Promise<Publisher> {
  throw new UsageError(`--broker ${spec.kind} is not available yet`, 'Omit --broker to use the loopback broker')
}

export async function brokerSource(spec: BrokerSpec, _prefix: string, _consumer: string): Promise<MessageSource> {
  throw new UsageError(`--broker ${spec.kind} is not available yet`, 'Omit --broker to use the loopback broker')
}
