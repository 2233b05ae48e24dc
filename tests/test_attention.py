"""OAttention contracts (docs/method.md, "OAttention"), property-based over shapes, seeds and dtypes."""

import math

import pytest
import torch
import torch.nn.functional as F
from devices import DEVICES
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.tools.attention_inputs import AttentionInputs, random_attention_inputs, with_null_keys
from benchmarks.tools.op_count import dispatched_ops
from retrofit.errors import RetrofitError
from retrofit.ops import (
    EPS_MODES,
    o_attention,
    o_attention_materialised,
    o_attention_query_sets,
    o_attention_reference,
)
from retrofit.ops.insertion import insert_rows, keep_mask

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
# Null-source insertion without compact: tolerance in units of eps(dtype) * rowmax|out|.
INSERTION_TOL = {torch.float32: 10.0, torch.bfloat16: 2.0, torch.float16: 2.0}
# Accuracy vs the float64 reference in units of eps(dtype) * max|ref|, unit-variance scores.
ACCURACY_TOL = {torch.float32: 8.0, torch.bfloat16: 1.0, torch.float16: 1.0}
FAST = settings(max_examples=15, deadline=None)


def every_setting(test):
    """`test` parametrized over every dtype, compaction and `eps_mode` (the stack of three)."""
    for name, values in (("dtype", DTYPES), ("compact", [False, True]), ("eps_mode", EPS_MODES)):
        test = pytest.mark.parametrize(name, values)(test)
    return test


@st.composite
def inputs(draw, dtype=torch.float32, score_std=1.0, null_fraction=0.3) -> AttentionInputs:
    """Random OAttention inputs (GQA included); scores q.k/sqrt(D) have std `score_std`."""
    B, G, groups = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    Q, K, D = draw(st.integers(1, 24)), draw(st.integers(1, 24)), draw(st.sampled_from([8, 16, 32]))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    return random_attention_inputs(
        B, G * groups, G, Q, K, D, dtype=dtype, score_std=score_std, null_fraction=null_fraction, generator=g
    )


def eps(dtype):
    return torch.finfo(dtype).eps


def assert_unchanged(after: torch.Tensor, before: torch.Tensor, bitwise: bool) -> None:
    """Bitwise equal, or within INSERTION_TOL * eps(dtype) * rowmax|before| per entry."""
    if bitwise:
        assert torch.equal(after, before)
    else:
        rowmax = before.abs().amax(-1, keepdim=True).float()
        tol = INSERTION_TOL[before.dtype] * eps(before.dtype) * rowmax
        assert ((after.float() - before.float()).abs() <= tol).all()


@every_setting
@FAST
@given(data=st.data())
def test_null_receiver_output_is_exactly_zero(data, dtype, compact, eps_mode):
    x = data.draw(inputs(dtype))
    out = o_attention(*x.args(), compact=compact, eps_mode=eps_mode)
    assert out.dtype == dtype and out.shape == x.q.shape
    assert torch.isfinite(out).all()
    assert (out.permute(0, 2, 1, 3)[x.p_q == 0] == 0).all()


@every_setting
@FAST
@given(data=st.data())
def test_null_source_insertion_leaves_outputs_unchanged(data, dtype, compact, eps_mode):
    x = data.draw(inputs(dtype))
    K = x.k.shape[2]
    positions = data.draw(st.lists(st.integers(0, K), min_size=1, max_size=5))
    scale = data.draw(st.sampled_from([0.0, 1.0, 50.0]))
    x_ins = with_null_keys(x, positions, scale=scale, generator=torch.Generator().manual_seed(len(positions)))
    out = o_attention(*x.args(), compact=compact, eps_mode=eps_mode)
    assert_unchanged(o_attention(*x_ins.args(), compact=compact, eps_mode=eps_mode), out, bitwise=compact)


@every_setting
@FAST
@given(seed=st.integers(0, 2**31 - 1), L=st.integers(1, 20), pos=st.integers(0, 20))
def test_self_attention_null_insertion(seed, L, pos, dtype, compact, eps_mode):
    """A null token h = 0 inserted into self-attention: others unchanged, its own output 0.

    The projections have biases, so the null token's q, k, v are not zero: only its presence
    makes it inert. Rows are projected once and the null row spliced in, because a CPU GEMM
    over L + 1 rows need not reproduce the L-row GEMM bitwise (that is the GEMM, not OAttention).
    """
    g = torch.Generator().manual_seed(seed)
    B, H, D, E = 2, 2, 8, 16
    w_EE, b_E = torch.randn(3 * E, E, generator=g) / 4, torch.randn(3 * E, generator=g)
    h_BLE = torch.randn(B, L, E, generator=g)
    keep_L = keep_mask(L, [min(pos, L)])
    qkv_BLE = F.linear(h_BLE, w_EE, b_E)
    null_row_E = F.linear(torch.zeros(E), w_EE, b_E)
    qkv_ins_BLE = torch.where(keep_L[:, None], insert_rows(qkv_BLE, keep_L, dim=1), null_row_E)
    p_BL = torch.rand(B, L, generator=g).clamp_min(0.05)
    p_ins_BL = insert_rows(p_BL, keep_L, dim=1)

    def attend(qkv, p):
        q, k, v = (t.view(B, -1, H, D).transpose(1, 2).to(dtype) for t in qkv.chunk(3, -1))
        return o_attention(q, k, v, p, p, compact=compact, eps_mode=eps_mode)

    out, out_ins = attend(qkv_BLE, p_BL), attend(qkv_ins_BLE, p_ins_BL)
    assert (out_ins[:, :, ~keep_L] == 0).all()
    assert_unchanged(out_ins[:, :, keep_L], out, bitwise=compact)


@every_setting
@pytest.mark.parametrize("score_std", [1.0, 40.0])
@pytest.mark.parametrize("K", [7, 1500])
def test_empty_support_is_exactly_zero_never_nan(dtype, compact, score_std, K, eps_mode):
    """All-null batch and all-masked rows give 0; with score_std=40, fp16 would underflow
    eps_den * exp(-max) if eps_den were added after max-subtraction in fp16; with K=1500 the
    kernel meets whole key blocks of -inf logits before the sink."""
    g = torch.Generator().manual_seed(0)
    B, H, Q, D = 3, 2, 5, 16
    s = math.sqrt(score_std)
    q, k, v = ((s if i < 2 else 1.0) * torch.randn(B, H, L, D, generator=g) for i, L in enumerate((Q, K, K)))
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    p_q, p_k = torch.rand(B, Q, generator=g) + 0.1, torch.rand(B, K, generator=g) + 0.1
    p_k[0] = 0.0  # batch 0: every source null
    mask_BHQK = torch.ones(B, 1, Q, K, dtype=torch.bool)
    mask_BHQK[1, :, 2] = False  # batch 1, query 2: every source masked
    out = o_attention(q, k, v, p_q, p_k, mask=mask_BHQK, compact=compact, eps_mode=eps_mode)
    assert torch.isfinite(out).all()
    assert (out[0] == 0).all() and (out[1, :, 2] == 0).all()
    assert out[2].abs().sum() > 0
    ref = o_attention_reference(q, k, v, p_q, p_k, mask=mask_BHQK, eps_mode=eps_mode)
    assert (ref[0] == 0).all() and (ref[1, :, 2] == 0).all()


@pytest.mark.parametrize("device", DEVICES)
@every_setting
@settings(max_examples=30, deadline=None)
@given(data=st.data(), mask_kind=st.sampled_from([None, "QK", "B1QK", "B11K"]))
def test_accuracy_vs_float64_reference(data, dtype, compact, mask_kind, eps_mode, device):
    """Within `ACCURACY_TOL` of the float64 reference (computed on the same device)."""
    x = data.draw(inputs(dtype)).to(device)
    B, _, Q, _ = x.q.shape
    K = x.k.shape[2]
    mask = None
    if mask_kind is not None:
        shape = {"QK": (Q, K), "B1QK": (B, 1, Q, K), "B11K": (B, 1, 1, K)}[mask_kind]
        g = torch.Generator().manual_seed(data.draw(st.integers(0, 1000)))
        mask = (torch.rand(shape, generator=g) < 0.7).to(device)
    out = o_attention(*x.args(), mask=mask, compact=compact, eps_mode=eps_mode)
    ref = o_attention_reference(*x.args(), mask=mask, eps_mode=eps_mode)
    err = (out.double() - ref).abs().max()
    assert err <= ACCURACY_TOL[dtype] * eps(dtype) * ref.abs().max()


@FAST
@given(data=st.data())
def test_reference_is_the_formula(data):
    """The max-subtracted reference equals the textbook formula evaluated without subtraction
    (scores shifted by +8 and a large eps_den, so a wrong eps rescaling would show)."""
    x = data.draw(inputs(torch.float64))
    eps_den = data.draw(st.sampled_from([1e-6, 0.5, 30.0]))
    s_BHQK = x.q @ x.k.repeat_interleave(x.q.shape[1] // x.k.shape[1], 1).transpose(-1, -2)
    s_BHQK = s_BHQK / math.sqrt(x.q.shape[-1])
    w_BHQK = x.p_k.double()[:, None, None, :] * torch.exp(s_BHQK)
    v_BHKD = x.v.repeat_interleave(x.q.shape[1] // x.k.shape[1], 1)
    textbook = x.p_q.double()[:, None, :, None] * (w_BHQK @ v_BHKD) / (eps_den + w_BHQK.sum(-1, keepdim=True))
    ref = o_attention_reference(*x.args(), eps_den=eps_den)
    torch.testing.assert_close(ref, textbook, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(o_attention(*x.args(), eps_den=eps_den), textbook, rtol=1e-9, atol=1e-9)
    # relative: the denominator is (1 + eps_den) W_i, and 0 where W_i = 0 (every source null)
    W_BHQ1 = w_BHQK.sum(-1, keepdim=True)
    textbook = x.p_q.double()[:, None, :, None] * (w_BHQK @ v_BHKD) / ((1 + eps_den) * W_BHQ1.clamp_min(1e-300))
    ref = o_attention_reference(*x.args(), eps_den=eps_den, eps_mode="relative")
    torch.testing.assert_close(ref, textbook, rtol=1e-12, atol=1e-12)
    fused = o_attention(*x.args(), eps_den=eps_den, eps_mode="relative")
    torch.testing.assert_close(fused, textbook, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("compact", [False, True])
@FAST
@given(data=st.data(), c=st.floats(0.1, 1.0))
def test_equal_presences_reduce_to_softmax_attention(data, c, compact):
    """p_q = p_k = c: the presences cancel in the softmax, leaving c * SDPA scaled by the
    eps_den factor c S / (eps_den + c S), S = sum_j exp(s_ij) (eps_den in absolute exp units)."""
    x = data.draw(inputs(torch.float32, null_fraction=0.0))
    p_q, p_k = torch.full_like(x.p_q, c), torch.full_like(x.p_k, c)
    out = o_attention(x.q, x.k, x.v, p_q, p_k, compact=compact)
    k, v = (t.repeat_interleave(x.q.shape[1] // x.k.shape[1], 1) for t in (x.k, x.v))
    sdpa = F.scaled_dot_product_attention(x.q, k, v)
    s_BHQK = x.q.double() @ k.double().transpose(-1, -2) / math.sqrt(x.q.shape[-1])
    mass_BHQ1 = c * torch.logsumexp(s_BHQK, -1, keepdim=True).exp()
    expected = c * sdpa.double() * mass_BHQ1 / (1e-6 + mass_BHQ1)
    torch.testing.assert_close(out.double(), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("eps_mode", EPS_MODES)
@pytest.mark.parametrize("compact", [False, True])
@FAST
@given(data=st.data())
def test_gradients_finite_and_match_reference(data, compact, eps_mode):
    """Gradients exist and are finite with null tokens and empty support; on present entries
    they match float64 autograd through the reference. At p = 0 the gradient w.r.t. p may be 0
    instead of the formula's one-sided derivative (log-presence bias, compaction); through
    presence(h) it is 0 there anyway, since dp/dh = 0 at h = 0."""
    x = data.draw(inputs(torch.float32))
    x.p_k[0] = 0.0  # batch 0 has empty support
    leaves = [t.clone().requires_grad_() for t in x.args()]
    leaves64 = [t.detach().double().requires_grad_() for t in x.args()]
    g = torch.Generator().manual_seed(1)
    w = torch.randn(*x.q.shape[:3], x.v.shape[-1], generator=g)
    (o_attention(*leaves, compact=compact, eps_mode=eps_mode) * w).sum().backward()
    (o_attention_reference(*leaves64, eps_mode=eps_mode) * w.double()).sum().backward()
    for name, leaf, leaf64 in zip(["q", "k", "v", "p_q", "p_k"], leaves, leaves64, strict=True):
        # None: the output does not depend on the leaf (compact with no present token at all).
        grad = torch.zeros_like(leaf) if leaf.grad is None else leaf.grad
        assert torch.isfinite(grad).all(), name
        if name.startswith("p_"):  # only present entries: the gradient at p = 0 may be 0
            present = leaf64.detach() > 0
            grad, expected = grad[present], leaf64.grad[present]
        else:
            expected = leaf64.grad
        torch.testing.assert_close(grad.double(), expected, rtol=1e-4, atol=1e-4, msg=name)


def shifted_queries(x: AttentionInputs, shift_BHQ: torch.Tensor) -> AttentionInputs:
    """Inputs with one extra head dimension such that s'_ij = s_ij + shift_i exactly in float64:
    q' = [q sqrt((D+1)/D), shift sqrt(D+1)], k' = [k, 1], so q'.k'/sqrt(D+1) = q.k/sqrt(D) + shift."""
    D = x.q.shape[-1]
    q = torch.cat([x.q * math.sqrt((D + 1) / D), shift_BHQ[..., None] * math.sqrt(D + 1)], dim=-1)
    k = torch.cat([x.k, torch.ones_like(x.k[..., :1])], dim=-1)
    return AttentionInputs(q, k, x.v, x.p_q, x.p_k)


@pytest.mark.parametrize("compact", [False, True])
@FAST
@given(data=st.data(), shift=st.sampled_from([-60.0, -20.0, 15.0]))
def test_relative_is_shift_invariant(data, shift, compact):
    """Shifting every logit of a query by a constant leaves `relative` unchanged (float64
    reference to rounding, fused float32 to the accuracy tolerance) while `absolute` collapses to
    ~0 at shift -60 (all logits ~60 below the sink logit log eps_den ~ -13.8)."""
    x = data.draw(inputs(torch.float64))
    g = torch.Generator().manual_seed(data.draw(st.integers(0, 1000)))
    shift_BHQ = shift + torch.rand(x.q.shape[:3], generator=g, dtype=torch.float64)  # per query
    x_shift = shifted_queries(x, shift_BHQ)
    ref = o_attention_reference(*x.args(), eps_mode="relative")
    torch.testing.assert_close(o_attention_reference(*x_shift.args(), eps_mode="relative"), ref, rtol=1e-9, atol=1e-12)
    x32 = AttentionInputs(*(t.float() if t.dtype == torch.float64 else t for t in x_shift.args()))
    out = o_attention(*x32.args(), eps_mode="relative", compact=compact)
    assert (out.double() - ref).abs().max() <= 200 * eps(torch.float32) * ref.abs().max().clamp_min(1e-30)
    if shift == -60.0:
        assert o_attention_reference(*x_shift.args()).abs().max() <= 1e-12 * ref.abs().max().clamp_min(1.0)


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data())
def test_relative_with_tiny_eps_is_presence_weighted_softmax_attention(data, dtype, compact):
    """eps_den -> 0: `relative` is p_q * softmax attention with the bias log p_k, i.e. SDPA with
    that bias, gated, to rounding; a row with no present source gives 0 (SDPA alone gives NaN)."""
    x = data.draw(inputs(dtype))
    out = o_attention(*x.args(), eps_den=1e-30, eps_mode="relative", compact=compact)
    k, v = (t.repeat_interleave(x.q.shape[1] // x.k.shape[1], 1) for t in (x.k, x.v))
    bias_B11K = torch.log(x.p_k.double())[:, None, None, :]
    sdpa = F.scaled_dot_product_attention(x.q.double(), k.double(), v.double(), attn_mask=bias_B11K)
    empty_B = (x.p_k == 0).all(1)
    expected = torch.where(empty_B[:, None, None, None], 0.0, x.p_q.double()[:, None, :, None] * sdpa)
    err = (out.double() - expected).abs().max()
    assert err <= ACCURACY_TOL[dtype] * eps(dtype) * expected.abs().max()
    assert (out[empty_B] == 0).all()


def test_gqa_equals_repeated_heads():
    x = random_attention_inputs(
        2,
        6,
        2,
        9,
        11,
        16,
        dtype=torch.float32,
        score_std=1.0,
        null_fraction=0.2,
        generator=torch.Generator().manual_seed(3),
    )
    out = o_attention(*x.args())
    out_rep = o_attention(x.q, x.k.repeat_interleave(3, 1), x.v.repeat_interleave(3, 1), x.p_q, x.p_k)
    torch.testing.assert_close(out, out_rep, rtol=0, atol=1e-6)


@pytest.mark.parametrize("eps_mode", EPS_MODES)
def test_materialised_baseline_matches_reference(eps_mode):
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, 2, 7, 8, generator=g) for _ in range(3))
    p_q, p_k = torch.rand(2, 7, generator=g), torch.rand(2, 7, generator=g)
    p_k[1] = 0.0  # empty support
    out = o_attention_materialised(q, k, v, p_q, p_k, eps_mode=eps_mode)
    assert out.dtype == torch.float32 and (out[1] == 0).all() and out[0].abs().sum() > 0
    ref = o_attention_reference(q, k, v, p_q, p_k, eps_mode=eps_mode)
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "shapes, kwargs, match",
    [
        (((2, 2, 3, 8), (2, 2, 4, 8), (2, 2, 4, 8), (2, 3), (2, 4)), {"eps_den": 0.0}, "eps_den"),
        (((2, 3, 8), (2, 2, 4, 8), (2, 2, 4, 8), (2, 3), (2, 4)), {}, "4-D"),
        (((2, 3, 3, 8), (2, 2, 4, 8), (2, 2, 4, 8), (2, 3), (2, 4)), {}, "multiple"),
        (((2, 2, 3, 8), (2, 2, 4, 8), (2, 2, 4, 8), (2, 3), (2, 5)), {}, "presences"),
        (((2, 2, 3, 8), (2, 2, 4, 4), (2, 2, 4, 8), (2, 3), (2, 4)), {}, "head dim"),
    ],
)
def test_bad_inputs_raise_clear_errors(shapes, kwargs, match):
    with pytest.raises(ValueError, match=match):
        o_attention(*[torch.rand(s) for s in shapes], **kwargs)


def test_unknown_eps_mode_raises_retrofit_error():
    q = k = v = torch.rand(2, 2, 4, 8)
    for op in (o_attention, o_attention_reference, o_attention_materialised):
        with pytest.raises(RetrofitError, match=r"eps_mode must be one of \('absolute', 'relative'\)"):
            op(q, k, v, torch.rand(2, 4), torch.rand(2, 4), eps_mode="Relative")


def test_float_mask_is_rejected():
    q = k = v = torch.rand(2, 2, 4, 8)
    with pytest.raises(ValueError, match="bool"):
        o_attention(q, k, v, torch.rand(2, 4), torch.rand(2, 4), mask=torch.zeros(4, 4))


@pytest.mark.parametrize("eps_mode", EPS_MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_key_presence_at_or_below_zero_or_nan_is_null_with_or_without_a_gradient(dtype, eps_mode):
    """A key with p = 0, -0.0, p < 0 or p NaN weighs exactly nothing: the output equals that with
    p = 0 there, bit for bit, whether p carries a gradient or not; with one, p's gradient is 0 at
    those keys, not NaN. The direct evaluation (one computation, with or without autograd) gives
    the same bits either way: the two evaluations of the log-presence bias agree."""
    g = torch.Generator().manual_seed(0)
    x = random_attention_inputs(2, 2, 1, 6, 9, 8, dtype=dtype, score_std=1.0, null_fraction=0.0, generator=g)
    odd_k = x.p_k.clone()
    odd_k[:, :5] = torch.tensor([0.0, -0.0, -0.5, math.nan, torch.finfo(torch.float32).tiny / 4])
    null_k = odd_k.clone()
    null_k[:, :4] = 0.0
    for op in (o_attention, o_attention_reference):
        expected = op(x.q, x.k, x.v, x.p_q, null_k, eps_mode=eps_mode)
        assert torch.equal(op(x.q, x.k, x.v, x.p_q, odd_k, eps_mode=eps_mode), expected)
        p_k = odd_k.clone().requires_grad_()
        out = op(x.q, x.k, x.v, x.p_q, p_k, eps_mode=eps_mode)
        null_with_gradient = op(x.q, x.k, x.v, x.p_q, null_k.clone().requires_grad_(), eps_mode=eps_mode)
        assert torch.equal(out.detach(), null_with_gradient.detach())
        if op is o_attention_reference:
            assert torch.equal(out.detach(), expected)
        out.float().square().sum().backward()
        assert (p_k.grad[:, :4] == 0).all() and torch.isfinite(p_k.grad).all()


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("eps_mode", EPS_MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_query_sets_are_each_o_attention_on_their_heads(dtype, eps_mode, compact):
    """`o_attention_query_sets` (the key-side terms computed once) gives each set bitwise what
    `o_attention` gives it on its first `kv_heads` key/value heads."""
    g = torch.Generator().manual_seed(3)
    x = random_attention_inputs(2, 4, 2, 11, 9, 8, dtype=dtype, score_std=1.0, null_fraction=0.3, generator=g)
    x.p_k[1] = 0.0  # batch 1: empty support
    sets = [(x.q[:, :, :7], x.p_q[:, :7], 2), (x.q[:, :, 7:], x.p_q[:, 7:], 1)]
    kwargs = {"eps_mode": eps_mode, "compact": compact}
    outs = o_attention_query_sets(sets, x.k, x.v, x.p_k, **kwargs)
    for out, (q, p_q, g) in zip(outs, sets, strict=True):
        assert torch.equal(out, o_attention(q, x.k[:, :g], x.v[:, :g], p_q, x.p_k, **kwargs))
    if not compact:  # the log-presence bias is computed once for both sets
        counts = dispatched_ops(lambda: o_attention_query_sets(sets, x.k, x.v, x.p_k, **kwargs))
        assert counts["aten.log.default"] == 1
    with pytest.raises(ValueError, match="multiple of"):
        o_attention_query_sets([(x.q[:, :3], x.p_q, 2)], x.k, x.v, x.p_k)
