// Draws a Picture as SVG, and the self-contained HTML page
// around it. Ops are boxes coloured by channel type. Dashed
// arrows go from a signal to the wait it releases; green
// ones carry data read on another rank. Ops a finding names
// are outlined in red, the findings listed below. The page
// zooms with the wheel, pans by dragging, details on hover.
#ifndef MSCCLPP_TOOLS_PLAN_RENDER_SVG_WRITER_HPP_
#define MSCCLPP_TOOLS_PLAN_RENDER_SVG_WRITER_HPP_

#include <string>

#include "cli/plan/render/plan_picture.hpp"

namespace mscclpp::plan::render {

std::string toSvg(const Picture& picture);
std::string toHtml(const Picture& picture);

}  // namespace mscclpp::plan::render

#endif  // MSCCLPP_TOOLS_PLAN_RENDER_SVG_WRITER_HPP_
