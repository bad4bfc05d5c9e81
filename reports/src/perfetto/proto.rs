//! The subset of Perfetto's trace protobuf (`protos/perfetto/trace/*.proto`) that fsyncsim
//! writes, as prost messages with Perfetto's field numbers: a `Trace` is a stream of
//! `TracePacket`s carrying track descriptors, clock snapshots, interned names and track
//! events. Decoding a written file with these types is what tests/trace.rs does.

/// `perfetto.protos.Trace`: the file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    /// The packets, in file order.
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `perfetto.protos.TracePacket` (the fields fsyncsim uses).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    /// Time, in the packet's clock (the sequence's incremental clock by default).
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// The clock of `timestamp` when not the sequence default.
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    /// The writer sequence the packet belongs to.
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// Names interned on this sequence.
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    /// `SEQ_INCREMENTAL_STATE_CLEARED` (1) on a sequence's first packet.
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// Defaults for the sequence's later packets.
    #[prost(message, optional, tag = "59")]
    pub trace_packet_defaults: Option<TracePacketDefaults>,
    /// A clock snapshot (the sequence's incremental clock).
    #[prost(message, optional, tag = "6")]
    pub clock_snapshot: Option<ClockSnapshot>,
    /// A slice begin or end, an instant or a counter value.
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    /// A track: process, thread, named child track or counter.
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
    /// Packets (as in `Trace`) deflated with zlib, under 512 KB a packet.
    #[prost(bytes = "vec", optional, tag = "50")]
    pub compressed_packets: Option<Vec<u8>>,
}

/// `perfetto.protos.TracePacketDefaults`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacketDefaults {
    /// The clock of packets that name none.
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    /// Track event defaults.
    #[prost(message, optional, tag = "11")]
    pub track_event_defaults: Option<TrackEventDefaults>,
}

/// `perfetto.protos.TrackEventDefaults`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEventDefaults {
    /// The track of events that name none.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
}

/// `perfetto.protos.ClockSnapshot`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClockSnapshot {
    /// The clocks' readings at one instant.
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
}

/// `perfetto.protos.ClockSnapshot.Clock`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Clock {
    /// 6 = BOOTTIME; 64..=127 are sequence-scoped.
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    /// The reading.
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
    /// Timestamps in this clock are deltas from the sequence's previous one.
    #[prost(bool, optional, tag = "3")]
    pub is_incremental: Option<bool>,
}

/// `perfetto.protos.InternedData` (event names).
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedData {
    /// Event names.
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<EventName>,
}

/// `perfetto.protos.EventName`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EventName {
    /// Interning id, per sequence.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// The name.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// `perfetto.protos.TrackEvent` (the fields fsyncsim uses).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    /// `TYPE_SLICE_BEGIN` 1, `TYPE_SLICE_END` 2, `TYPE_INSTANT` 3, `TYPE_COUNTER` 4.
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    /// The track, when not the sequence default.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    /// The interned name.
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    /// A counter's value.
    #[prost(int64, optional, tag = "30")]
    pub counter_value: Option<i64>,
    /// Flows this event starts (a task waking another).
    #[prost(fixed64, repeated, packed = "false", tag = "47")]
    pub flow_ids: Vec<u64>,
    /// Flows this event ends.
    #[prost(fixed64, repeated, packed = "false", tag = "48")]
    pub terminating_flow_ids: Vec<u64>,
}

/// `TrackEvent.Type`.
pub const SLICE_BEGIN: i32 = 1;
/// `TrackEvent.Type`.
pub const SLICE_END: i32 = 2;
/// `TrackEvent.Type`.
pub const INSTANT: i32 = 3;
/// `TrackEvent.Type`.
pub const COUNTER: i32 = 4;
/// `BuiltinClock.BOOTTIME`.
pub const BOOTTIME: u32 = 6;
/// The first sequence-scoped clock id: each sequence's incremental nanosecond clock.
pub const INCREMENTAL: u32 = 64;

/// `perfetto.protos.TrackDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    /// The track's id.
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// The track it is nested in.
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    /// Its name (child and counter tracks).
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    /// A process track.
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    /// A thread track.
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    /// A counter track.
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

/// `perfetto.protos.ProcessDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    /// Process id (one per simulated run).
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// The run's title.
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

/// `perfetto.protos.ThreadDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadDescriptor {
    /// Its process.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// Thread id (unique in the file; never 0, which viewers take for the idle task).
    #[prost(int32, optional, tag = "2")]
    pub tid: Option<i32>,
    /// The simulated task's name.
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

/// `perfetto.protos.CounterDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CounterDescriptor {
    /// `UNIT_COUNT` = 2, `UNIT_SIZE_BYTES` = 3.
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
}
