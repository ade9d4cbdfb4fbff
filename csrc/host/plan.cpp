#include "purlin/plan.h"

#include <algorithm>

namespace purlin {

namespace {

struct Reader {
  const int64_t* w;
  int64_t n, at = 0;
  int64_t take(const char* what) {
    if (at >= n) throw PlanError(std::string("plan is truncated in ") + what);
    return w[at++];
  }
};

void check(bool ok, const std::string& msg) {
  if (!ok) throw PlanError(msg);
}

std::string where(int64_t rank, int64_t role, int64_t n, const Instr& in) {
  return "rank " + std::to_string(rank) + " role " + std::to_string(role) + " instruction " + std::to_string(n) +
         " (" + op_name(in.op) + ")";
}

// One instruction of `rank`'s program: std::invalid_argument names it.
class InstrCheck {
 public:
  InstrCheck(const Plan& p, int64_t rank, int64_t role, int64_t n, const Instr& in)
      : p_(p), rank_(rank), role_(role), n_(n), in_(in) {}

  void run() const {
    if (in_.op == Op::Wait || in_.op == Op::Signal) check_flag();
    if (in_.op == Op::Copy || in_.op == Op::Reduce) {
      if (in_.dst < 0) fail("has no destination");
      check_ref(in_.dst, "destination", true);
    }
    if ((in_.op == Op::Copy || in_.op == Op::Put) && in_.src_count != 1)
      fail("takes one source, got " + std::to_string(in_.src_count));
    if (in_.op == Op::Reduce) check_reduction();
    for (int64_t k = 0; k < in_.src_count; ++k) check_ref(in_.src_first + k, "source", false);
    const int64_t per_packet = kPacketDataBytes / p_.elem_bytes();
    if ((in_.op == Op::Put || in_.op == Op::WaitPackets) && in_.offset % per_packet)
      fail("window offset " + std::to_string(in_.offset) + " does not start a packet (" + std::to_string(per_packet) +
           " elements)");
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw std::invalid_argument("plan " + where(rank_, role_, n_, in_) + ": " + msg);
  }

  // A wait's or signal's flag: its base, offset and memory order.
  void check_flag() const {
    if (in_.base != Base::Epoch && in_.base != Base::Prev)
      fail("flag base " + std::to_string(static_cast<int64_t>(in_.base)) + " is neither epoch (0) nor prev (1)");
    if (in_.rel < 0) fail("flag offset " + std::to_string(in_.rel) + " is negative");
    const Order bad = in_.op == Op::Wait ? Order::Release : Order::Acquire;
    if ((in_.order != Order::Relaxed && in_.order != Order::Acquire && in_.order != Order::Release) ||
        in_.order == bad)
      fail("memory order " + std::to_string(static_cast<int64_t>(in_.order)) + " is not valid here (" +
           (in_.op == Op::Wait ? "relaxed or acquire" : "relaxed or release") + " expected)");
  }

  void check_reduction() const {
    if (in_.src_count < 1) fail("a reduce needs at least one source");
    if (in_.redop < RedOp::Sum || in_.redop > RedOp::Avg)
      fail("reduction " + std::to_string(static_cast<int64_t>(in_.redop)) +
           " is not sum, max, min, prod, and, or, xor or avg");
    if (in_.redop >= RedOp::And && in_.redop <= RedOp::Xor && !integer_dtype(p_.dtype))
      fail("bitwise reduction of a floating-point dtype");
    if (in_.redop == RedOp::Avg && integer_dtype(p_.dtype)) fail("average of an integer dtype");
  }

  // User buffers are mapped for their own rank only, unless the plan is symmetric; staging and windows
  // must be of the kind the space names.
  void check_ref(int64_t index, const char* what, bool writes) const {
    const Ref& r = p_.refs[index];
    if (r.space == Space::Input || r.space == Space::Output) {
      if (r.rank != rank_ && !p_.symmetric)
        fail(std::string(what) + " names rank " + std::to_string(r.rank) + "'s " +
             (r.space == Space::Input ? "input" : "output") + ", only rank " + std::to_string(rank_) +
             "'s is mapped (the plan is not symmetric)");
      if (writes && r.space == Space::Input) fail(std::string(what) + " writes the input buffer");
      return;
    }
    const BufKind want = r.space == Space::Staging ? BufKind::Staging : BufKind::Packets;
    if (p_.buffers[r.buf].kind != want)
      fail(std::string(what) + " uses buffer " + std::to_string(r.buf) + " as " +
           (want == BufKind::Staging ? "staging, it is a packet window" : "a packet window, it is staging"));
  }

  const Plan& p_;
  const int64_t rank_, role_, n_;
  const Instr& in_;
};

}  // namespace

const char* op_name(Op op) {
  switch (op) {
    case Op::Wait: return "wait";
    case Op::Signal: return "signal";
    case Op::Copy: return "copy";
    case Op::Reduce: return "reduce";
    case Op::Put: return "put";
    case Op::WaitPackets: return "wait_packets";
  }
  return "?";
}

const char* role_name(RoleKind kind) {
  const auto k = static_cast<int64_t>(kind);
  return k >= 0 && k <= static_cast<int64_t>(RoleKind::Stream) ? kRoleKindNames[k] : "role";
}

void check_programs(const Plan& p) {
  for (int64_t rank = 0; rank < p.world; ++rank)
    for (int64_t role = 0; role < static_cast<int64_t>(p.roles.size()); ++role) {
      int64_t count;
      const Instr* body = p.program(rank, role, &count);
      for (int64_t n = 0; n < count; ++n) InstrCheck(p, rank, role, n, body[n]).run();
    }
}

Plan decode_plan(const int64_t* words, int64_t n) {
  check(n >= kHeaderWords, "plan is shorter than its header");
  check(words[0] == kMagic, "not a purlin plan (bad magic)");
  check(words[1] == kVersion, "plan format version " + std::to_string(words[1]) + " is not supported");
  Plan p;
  p.world = words[2];
  p.arch = words[3];
  check(words[4] >= 0 && words[4] < kDTypeCount, "unknown dtype code");
  p.dtype = static_cast<DType>(words[4]);
  p.input_elems = words[5];
  p.output_elems = words[6];
  p.advance = words[7];
  p.threads = words[8];
  const int64_t n_roles = words[9], n_buffers = words[10], n_signals = words[11];
  check((words[12] & ~kFlagSymmetric) == 0, "unknown header flags");
  p.symmetric = (words[12] & kFlagSymmetric) != 0;
  check(p.world >= 1 && p.world <= kMaxWorld, "world out of range");
  check(n_roles >= 1 && n_roles <= 64 && n_buffers >= 0 && n_buffers <= 64 && n_signals >= 0 && n_signals <= 64,
        "role, buffer or signal count out of range");
  check(valid_threads(p.threads), "threads per block out of range");
  check(p.advance >= 1 && p.advance % 2 == 1, "epoch advance must be odd");
  Reader r{words, n, kHeaderWords};
  for (int64_t i = 0; i < n_roles; ++i) {
    Role role{static_cast<RoleKind>(r.take("roles")), r.take("roles")};
    check(role.blocks >= 1 && role.blocks <= kMaxRoleBlocks, "a role needs 1 to " + std::to_string(kMaxRoleBlocks) +
                                                                 " blocks");
    p.roles.push_back(role);
  }
  for (int64_t i = 0; i < n_buffers; ++i) {
    Buffer b{static_cast<BufKind>(r.take("buffers")), r.take("buffers"), r.take("buffers")};
    check(b.kind == BufKind::Staging || b.kind == BufKind::Packets, "unknown buffer kind");
    check(b.slots >= 1 && b.elems >= 0, "bad buffer size");
    check(b.kind != BufKind::Staging || b.slots <= kMaxSlots,
          "a buffer has more than " + std::to_string(kMaxSlots) + " slots per half");
    // Both halves, as the runtimes allocate them; each factor bounded first so the product cannot overflow.
    const int64_t eb = kDTypeBytes[static_cast<int>(p.dtype)];
    const int64_t per_slot = b.kind == BufKind::Staging ? b.elems * eb
                                                         : (b.elems * eb + kPacketDataBytes - 1) / kPacketDataBytes *
                                                               kPacketBytes;
    check(b.elems <= kMaxBufferBytes && b.slots <= kMaxBufferBytes / std::max<int64_t>(1, 2 * per_slot),
          "a buffer takes more than " + std::to_string(kMaxBufferBytes) + " bytes");
    p.buffers.push_back(b);
  }
  for (int64_t i = 0; i < n_signals; ++i) {
    p.signal_slots.push_back(r.take("signals"));
    check(p.signal_slots.back() == p.world, "signal arrays have one slot per rank");
  }
  for (int64_t i = 0; i < p.world * n_roles; ++i) {
    int64_t first = r.take("directory"), count = r.take("directory");
    p.directory.emplace_back(first, count);
  }
  const int64_t n_instrs = r.take("table sizes"), n_refs = r.take("table sizes");
  check(n_instrs >= 0 && n_refs >= 0 && r.at + n_instrs * kInstrWords + n_refs * kRefWords == n,
        "instruction and ref tables do not fill the plan");
  for (const auto& d : p.directory)
    check(d.first >= 0 && d.second >= 0 && d.first + d.second <= n_instrs, "directory entry outside the table");
  for (int64_t i = 0; i < n_instrs; ++i) {
    const int64_t* f = words + r.at + i * kInstrWords;
    Instr in{static_cast<Op>(f[0]), static_cast<Mech>(f[1]), f[2], f[3], f[4], f[5], static_cast<Base>(f[6]),
             f[7], static_cast<Order>(f[8]), static_cast<Scope>(f[9]), static_cast<RedOp>(f[10]), f[11], f[12], f[13], f[14], f[15]};
    check(f[0] >= 1 && f[0] <= 6, "unknown opcode");
    check(in.elems >= 0, "negative element count");
    check(in.dst >= -1 && in.dst < n_refs, "destination ref outside the table");
    check(in.src_first >= 0 && in.src_count >= 0 && in.src_first + in.src_count <= n_refs,
          "source refs outside the table");
    if (in.op == Op::Wait || in.op == Op::Signal)
      check(in.sig >= 0 && in.sig < n_signals && in.slot >= 0 && in.slot < p.world, "signal outside its array");
    if (in.op == Op::Signal || in.op == Op::Put || in.op == Op::WaitPackets)
      check(in.peer >= 0 && in.peer < p.world, "peer outside the world");
    if (in.op == Op::Put || in.op == Op::WaitPackets) {
      check(in.buf >= 0 && in.buf < n_buffers && p.buffers[in.buf].kind == BufKind::Packets,
            "put/wait_packets needs a packet window");
      // An empty put or wait_packets still moves the packet at its offset (its flag).
      check(in.offset >= 0 && in.offset + std::max<int64_t>(in.elems, 1) <= p.buffers[in.buf].elems,
            "window range outside the window");
    }
    p.instrs.push_back(in);
  }
  const int64_t* refs = words + r.at + n_instrs * kInstrWords;
  for (int64_t i = 0; i < n_refs; ++i) {
    const int64_t* f = refs + i * kRefWords;
    Ref ref{static_cast<Space>(f[0]), f[1], f[2], f[3], f[4]};
    check(f[0] >= 0 && f[0] <= 3, "unknown memory space");
    check(ref.rank >= 0 && ref.rank < p.world && ref.offset >= 0, "ref outside the world");
    if (ref.space == Space::Staging || ref.space == Space::Window) {
      check(ref.buf >= 0 && ref.buf < n_buffers, "ref to a missing buffer");
      check(ref.slot >= 0 && ref.slot < p.buffers[ref.buf].slots, "ref slot outside its buffer");
    }
    p.refs.push_back(ref);
  }
  // Every data range must lie inside the memory it names.
  for (const auto& in : p.instrs) {
    auto fits = [&](int64_t idx) {
      const Ref& ref = p.refs[idx];
      int64_t size = ref.space == Space::Input    ? p.input_elems
                     : ref.space == Space::Output ? p.output_elems
                                                  : p.buffers[ref.buf].elems;
      check(ref.offset + in.elems <= size, "data range outside its buffer");
    };
    if (in.dst >= 0) fits(in.dst);
    for (int64_t k = 0; k < in.src_count; ++k) fits(in.src_first + k);
  }
  // What each rank's user buffers must hold: the ends of the ranges the copies,
  // reduces and puts move of them (a put's destination is its window, not a ref).
  p.input_extent.assign(p.world, 0);
  p.output_extent.assign(p.world, 0);
  for (int64_t rank = 0; rank < p.world; ++rank) {
    for (int64_t role = 0; role < n_roles; ++role) {
      int64_t count;
      const Instr* body = p.program(rank, role, &count);
      for (int64_t k = 0; k < count; ++k) {
        const Instr& in = body[k];
        if (in.elems == 0 || !(in.op == Op::Copy || in.op == Op::Reduce || in.op == Op::Put)) continue;
        auto touch = [&](int64_t idx) {
          const Ref& ref = p.refs[idx];
          std::vector<int64_t>* extent = ref.space == Space::Input    ? &p.input_extent
                                         : ref.space == Space::Output ? &p.output_extent
                                                                      : nullptr;
          if (extent) (*extent)[ref.rank] = std::max((*extent)[ref.rank], ref.offset + in.elems);
        };
        if (in.dst >= 0 && in.op != Op::Put) touch(in.dst);
        for (int64_t s = 0; s < in.src_count; ++s) touch(in.src_first + s);
      }
    }
  }
  return p;
}

}  // namespace purlin
