// Draws a Picture as SVG (one lane per rank and threadblock; ops as boxes coloured by channel type;
// dashed arrows from a signal to the wait it releases, green arrows for data read on another rank
// than it was written; ops named by a finding outlined in red; the findings listed below), and the
// self-contained HTML page around it (zoom with the wheel, pan by dragging, details on hover).
#ifndef MSCCLPP_TOOLS_PLAN_RENDER_SVG_WRITER_HPP_
#define MSCCLPP_TOOLS_PLAN_RENDER_SVG_WRITER_HPP_

#include <string>

#include "cli/plan/render/plan_picture.hpp"

namespace mscclpp::plan::render {

std::string toSvg(const Picture& picture);
std::string toHtml(const Picture& picture);

}  // namespace mscclpp::plan::render

#endif  // MSCCLPP_TOOLS_PLAN_RENDER_SVG_WRITER_HPP_
