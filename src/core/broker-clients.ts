// The broker clients, each imported on first use by a publisher, a consumer runtime or the
// chaos harness, and named in one line when the app did not install it (optional peers).
import {importOptional} from './optional.js'

export const loadAmqplib = async () => (await importOptional('amqplib', 'an amqp:// broker', () => import('amqplib'))).default
export const loadNats = () => importOptional('nats', 'a nats:// broker', () => import('nats'))
export const loadRedis = () => importOptional('redis', 'a redis:// broker', () => import('redis'))
