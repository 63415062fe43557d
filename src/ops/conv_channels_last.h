// ConvChannelsLast's one option beyond Conv's attributes (the op is
// described in conv_channels_last.cpp).
#pragma once

namespace kestrel::ops {

// Int, 1: the output is planar [N, M, oH, oW] rather than channels-last.
// The layout pass sets it on a chain's last layers where only planar
// readers follow: a 1x1 layer of a few channels (a detector's heads) is
// then one product of the weights with the channels-last input, written in
// the layout its readers want, with no reorder after it.
constexpr const char* kPlanarOutputAttr = "kestrel.planar_output";

}  // namespace kestrel::ops
