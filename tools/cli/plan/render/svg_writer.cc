#include "cli/plan/render/svg_writer.hpp"

#include <algorithm>

#include "core/format.hpp"

namespace mscclpp::plan::render {
namespace {

constexpr int kLeft = 104;  // lane labels
constexpr int kTop = 96;    // title, verdict, legend
constexpr int kLaneHeight = 48;
constexpr int kRankGap = 12;
// Boxes are as wide as their longest label, between these bounds;
// a column is a box and the gap the arrows run in.
constexpr int kMinBoxWidth = 98;
constexpr int kMaxBoxWidth = 260;
constexpr int kColumnGap = 18;
constexpr int kBadgeRoom = 20;  // right of the labels: a finding's badge
constexpr int kBoxHeight = 36;
constexpr int kFindingLine = 16;

struct Colors {
  const char* fill;
  const char* stroke;
  const char* name;
};

Colors colorsOf(BoxStyle s) {
  switch (s) {
    case BoxStyle::Memory:
      return {"#dbeafe", "#1d4ed8", "memory channel"};
    case BoxStyle::Port:
      return {"#ffedd5", "#c2410c", "port channel"};
    case BoxStyle::Switch:
      return {"#ede9fe", "#6d28d9", "switch channel"};
    case BoxStyle::Local:
      return {"#f1f5f9", "#475569", "local"};
    case BoxStyle::Sync:
      return {"#fef9c3", "#a16207", "semaphore"};
    case BoxStyle::Barrier:
      return {"#e5e7eb", "#111827", "barrier"};
    case BoxStyle::Pipeline:
      return {"#ecfccb", "#4d7c0f", "pipeline"};
  }
  return {"#ffffff", "#000000", "?"};
}

std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
          out += ' ';
        else
          out += c;
    }
  }
  return out;
}

std::string clip(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 1) + "~"; }

// The approximate width of 11px text: DejaVu
// Sans averages about 6.6 px per character.
int textWidth(const std::string& s) { return static_cast<int>(s.size() * 66 / 10); }
// Bold 11px runs wider, about 7.3 px; 10px text about 6.1.
int boldWidth(const std::string& s) { return static_cast<int>(s.size() * 73 / 10); }
int smallWidth(const std::string& s) { return static_cast<int>(s.size() * 61 / 10); }

constexpr int kLegendWidth = 1180;

struct Geometry {
  std::vector<int> laneY;
  int width = 0, height = 0, findingsY = 0;
  int boxWidth = kMinBoxWidth, columnWidth = kMinBoxWidth + kColumnGap;
  size_t titleChars = 0, chunkChars = 0;  // what fits; longer labels are clipped
};

Geometry measure(const Picture& p) {
  Geometry g;
  int y = kTop;
  for (size_t i = 0; i < p.lanes.size(); ++i) {
    if (i > 0 && p.lanes[i].rank != p.lanes[i - 1].rank) y += kRankGap;
    g.laneY.push_back(y);
    y += kLaneHeight;
  }
  g.findingsY = y + 24;
  int labels = 0;
  for (const Box& b : p.boxes) labels = std::max({labels, boldWidth(b.title), smallWidth(b.chunks)});
  g.boxWidth = std::clamp(labels + 5 + kBadgeRoom + 4, kMinBoxWidth, kMaxBoxWidth);  // 4: rounding
  g.columnWidth = g.boxWidth + kColumnGap;
  g.titleChars = static_cast<size_t>((g.boxWidth - 5 - kBadgeRoom) * 10 / 73);
  g.chunkChars = static_cast<size_t>((g.boxWidth - 5 - kBadgeRoom) * 10 / 61);
  size_t longest = 0;
  for (const auto& f : p.findings) longest = std::max(longest, f.size());
  g.width = std::max({kLeft + p.columns * g.columnWidth + 24, kLegendWidth,
                      textWidth(std::string(std::min<size_t>(longest, 400), 'x')) + 60});
  g.height = g.findingsY + (p.findings.empty() ? 0 : 22 + kFindingLine * static_cast<int>(p.findings.size())) + 16;
  return g;
}

void legend(std::string& o, int x, int y) {
  const BoxStyle styles[] = {BoxStyle::Memory, BoxStyle::Port,    BoxStyle::Switch,  BoxStyle::Local,
                             BoxStyle::Sync,   BoxStyle::Barrier, BoxStyle::Pipeline};
  for (BoxStyle s : styles) {
    const Colors c = colorsOf(s);
    o += strFormat("<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"12\" rx=\"2\" fill=\"%s\" stroke=\"%s\"/>", x, y - 10,
                   c.fill, c.stroke);
    o += strFormat("<text x=\"%d\" y=\"%d\">%s</text>", x + 18, y, c.name);
    x += 34 + textWidth(c.name);
  }
  o += strFormat(
      "<rect x=\"%d\" y=\"%d\" width=\"3\" height=\"14\" fill=\"#334155\"/><text x=\"%d\" y=\"%d\">nop "
      "(block-wide barrier)</text>",
      x, y - 11, x + 8, y);
  x += 24 + textWidth("nop (block-wide barrier)");
  o += strFormat(
      "<path d=\"M%d %d h30\" stroke=\"#1d4ed8\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\" "
      "marker-end=\"url(#arrow-memory)\"/><text x=\"%d\" y=\"%d\">signal &#8594; wait</text>",
      x, y - 4, x + 36, y);
  x += 50 + textWidth("signal -> wait");
  o += strFormat(
      "<path d=\"M%d %d h30\" stroke=\"#15803d\" stroke-width=\"1.5\" marker-end=\"url(#arrow-data)\"/>"
      "<text x=\"%d\" y=\"%d\">data to another rank</text>",
      x, y - 4, x + 36, y);
  x += 50 + textWidth("data to another rank");
  o += strFormat(
      "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"12\" rx=\"2\" fill=\"white\" stroke=\"#dc2626\" "
      "stroke-width=\"2.5\"/><text x=\"%d\" y=\"%d\">named by a finding</text>",
      x, y - 10, x + 18, y);
}

}  // namespace

std::string toSvg(const Picture& p) {
  const Geometry g = measure(p);
  std::string o;
  o.reserve(4096 + p.boxes.size() * 700);
  o += strFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"11\">\n",
      g.width, g.height, g.width, g.height);
  o += "<defs>";
  const std::pair<const char*, const char*> markers[] = {
      {"memory", "#1d4ed8"}, {"port", "#c2410c"}, {"sync", "#a16207"}, {"data", "#15803d"}};
  for (const auto& [name, color] : markers)
    o += strFormat(
        "<marker id=\"arrow-%s\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
        "markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0 0 L10 5 L0 10 z\" fill=\"%s\"/></marker>",
        name, color);
  o += "</defs>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o += strFormat("<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\">%s</text>\n", esc(p.title).c_str());
  o += strFormat("<text x=\"12\" y=\"46\" font-size=\"13\" fill=\"%s\" class=\"verdict\">%s</text>\n",
                 !p.verified ? "#475569"
                 : p.proven  ? "#15803d"
                             : "#dc2626",
                 esc(p.verdict).c_str());
  o += "<g class=\"legend\">";
  legend(o, 12, 74);
  o += "</g>\n<g class=\"lanes\">\n";
  for (size_t i = 0; i < p.lanes.size(); ++i) {
    const Lane& l = p.lanes[i];
    const bool shade = l.rank % 2 == 0;
    o += strFormat(
        "<g class=\"lane\" data-rank=\"%d\" data-tb=\"%d\"><rect x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\" "
        "fill=\"%s\"/><line x1=\"0\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#e2e8f0\"/>"
        "<text x=\"8\" y=\"%d\" font-weight=\"%s\">rank %d</text><text x=\"8\" y=\"%d\" fill=\"#475569\">tb "
        "%d</text></g>\n",
        l.rank, l.tb, g.laneY[i], g.width, kLaneHeight, shade ? "#f8fafc" : "#ffffff", g.laneY[i] + kLaneHeight,
        g.width, g.laneY[i] + kLaneHeight, g.laneY[i] + 20, l.tb == 0 ? "bold" : "normal", l.rank, g.laneY[i] + 35,
        l.tb);
  }
  o += "</g>\n";
  auto boxX = [&](const Box& b) { return kLeft + b.column * g.columnWidth; };
  auto boxY = [&](const Box& b) { return g.laneY[b.lane] + (kLaneHeight - kBoxHeight) / 2; };
  o += "<g class=\"arrows\" fill=\"none\">\n";
  for (const Arrow& a : p.arrows) {
    const Box& from = p.boxes[a.from];
    const Box& to = p.boxes[a.to];
    int x1 = boxX(from) + g.boxWidth, y1 = boxY(from) + kBoxHeight / 2;
    int x2 = boxX(to), y2 = boxY(to) + kBoxHeight / 2;
    std::string path;
    if (to.column - from.column <= 1 && from.lane != to.lane) {
      // Neighbouring columns: from the source's
      // bottom to the target's top, or top to bottom.
      const bool down = to.lane > from.lane;
      x1 = boxX(from) + g.boxWidth * 3 / 4;
      y1 = boxY(from) + (down ? kBoxHeight : 0);
      x2 = boxX(to) + g.boxWidth / 4;
      y2 = boxY(to) + (down ? 0 : kBoxHeight);
      const int dy = (y2 - y1) / 2;
      path = strFormat("M%d %d C%d %d %d %d %d %d", x1, y1, x1, y1 + dy, x2, y2 - dy, x2, y2);
    } else {
      const int bend = std::max(20, (x2 - x1) / 2);
      path = strFormat("M%d %d C%d %d %d %d %d %d", x1, y1, x1 + bend, y1, x2 - bend, y2, x2, y2);
    }
    const char* color = a.data                      ? "#15803d"
                        : a.style == BoxStyle::Port ? "#c2410c"
                        : a.style == BoxStyle::Sync ? "#a16207"
                                                    : "#1d4ed8";
    const char* marker = a.data                      ? "data"
                         : a.style == BoxStyle::Port ? "port"
                         : a.style == BoxStyle::Sync ? "sync"
                                                     : "memory";
    const char* dash = a.data ? "" : a.relaxed ? " stroke-dasharray=\"2 3\"" : " stroke-dasharray=\"5 3\"";
    o += strFormat(
        "<path class=\"%s\" d=\"%s\" stroke=\"%s\" stroke-width=\"1.4\" "
        "opacity=\"0.8\"%s marker-end=\"url(#arrow-%s)\"><title>%s</title></path>\n",
        a.data ? "data" : "signal", path.c_str(), color, dash, marker,
        esc(strFormat("%s: rank %d tb %d op %d -> rank %d tb %d op %d", a.data ? "data" : "signal -> wait", from.rank,
                      from.tb, from.op, to.rank, to.tb, to.op))
            .c_str());
  }
  o += "</g>\n<g class=\"ops\">\n";
  for (const Box& b : p.boxes) {
    const Colors c = colorsOf(b.style);
    const int x = boxX(b), y = boxY(b);
    const bool bad = !b.findings.empty();
    o += strFormat("<g class=\"op\" data-rank=\"%d\" data-tb=\"%d\" data-op=\"%d\" data-tip=\"%s\"><title>%s</title>",
                   b.rank, b.tb, b.op, esc(b.detail).c_str(), esc(b.detail).c_str());
    o += strFormat(
        "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"4\" fill=\"%s\" stroke=\"%s\" stroke-width=\"%s\"%s/>",
        x, y, g.boxWidth, kBoxHeight, c.fill, bad ? "#dc2626" : c.stroke, bad ? "2.5" : "1",
        b.inPipeline ? " stroke-dasharray=\"4 2\"" : "");
    if (b.syncBefore)
      o += strFormat("<rect x=\"%d\" y=\"%d\" width=\"3\" height=\"%d\" fill=\"#334155\"/>", x - 6, y - 2,
                     kBoxHeight + 4);
    o += strFormat("<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>", x + 5, y + 14,
                   esc(clip(b.title, g.titleChars)).c_str());
    o += strFormat("<text x=\"%d\" y=\"%d\" fill=\"#334155\" font-size=\"10\">%s</text>", x + 5, y + 28,
                   esc(clip(b.chunks, g.chunkChars)).c_str());
    if (bad) {
      // Inside the box's top-right corner, in the room kept for it;
      // a pill as wide as the number.
      const std::string number = std::to_string(b.findings[0] + 1);
      const int w = std::max(14, 4 + static_cast<int>(number.size()) * 7);
      o += strFormat(
          "<rect class=\"badge\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"14\" rx=\"7\" fill=\"#dc2626\"/>"
          "<text x=\"%d\" y=\"%d\" fill=\"white\" font-size=\"10\" font-weight=\"bold\" "
          "text-anchor=\"middle\">%s</text>",
          x + g.boxWidth - 3 - w, y + 3, w, x + g.boxWidth - 3 - w / 2, y + 13, number.c_str());
    }
    o += "</g>\n";
  }
  o += "</g>\n";
  if (!p.findings.empty()) {
    o += strFormat(
        "<g class=\"findings\"><text x=\"12\" y=\"%d\" font-size=\"13\" font-weight=\"bold\" "
        "fill=\"#dc2626\">Findings</text>",
        g.findingsY);
    for (size_t i = 0; i < p.findings.size(); ++i)
      o += strFormat("<text x=\"12\" y=\"%d\"><tspan font-weight=\"bold\" fill=\"#dc2626\">%zu</tspan>  %s</text>",
                     g.findingsY + 20 + static_cast<int>(i) * kFindingLine, i + 1, esc(p.findings[i]).c_str());
    o += "</g>\n";
  }
  o += "</svg>\n";
  return o;
}

std::string toHtml(const Picture& p) {
  std::string o = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + esc(p.title) + "</title>\n";
  o += R"(<style>
body{margin:0;font-family:DejaVu Sans,Helvetica,Arial,sans-serif;background:#fff}
#bar{padding:6px 12px;background:#0f172a;color:#e2e8f0;font-size:13px}
#view{position:absolute;top:30px;left:0;right:0;bottom:0;overflow:hidden;cursor:grab}
#view svg{width:100%;height:100%}
#tip{position:fixed;display:none;max-width:560px;white-space:pre-wrap;background:#0f172a;color:#f8fafc;
 font-size:12px;padding:8px 10px;border-radius:6px;pointer-events:none;box-shadow:0 4px 12px rgba(0,0,0,.3)}
g.op:hover rect{stroke-width:3}
</style></head><body>
)";
  o += "<div id=\"bar\">" + esc(p.title) + " &#8212; " + esc(p.verdict) +
       " &#8212; wheel: zoom, drag: pan, double-click: whole plan, hover an op: details</div>\n<div id=\"view\">";
  std::string svg = toSvg(p);
  o += svg;
  o += "</div><div id=\"tip\"></div>\n";
  o += R"(<script>
(function(){
  var view=document.getElementById('view'), svg=view.querySelector('svg'), tip=document.getElementById('tip');
  var w=+svg.getAttribute('width'), h=+svg.getAttribute('height'), vb={x:0,y:0,w:w,h:h};
  svg.removeAttribute('width'); svg.removeAttribute('height');
  svg.setAttribute('preserveAspectRatio','xMinYMin meet');
  function apply(){svg.setAttribute('viewBox',vb.x+' '+vb.y+' '+vb.w+' '+vb.h);}
  function point(e){var r=svg.getBoundingClientRect(), s=Math.max(vb.w/r.width, vb.h/r.height);
    return {x:vb.x+(e.clientX-r.left)*s, y:vb.y+(e.clientY-r.top)*s, s:s};}
  view.addEventListener('wheel',function(e){e.preventDefault(); var p=point(e), f=e.deltaY<0?0.8:1.25;
    vb.x=p.x-(p.x-vb.x)*f; vb.y=p.y-(p.y-vb.y)*f; vb.w*=f; vb.h*=f; apply();},{passive:false});
  var drag=null;
  view.addEventListener('mousedown',function(e){drag={x:e.clientX,y:e.clientY,vx:vb.x,vy:vb.y}; view.style.cursor='grabbing';});
  window.addEventListener('mouseup',function(){drag=null; view.style.cursor='grab';});
  window.addEventListener('mousemove',function(e){
    if(drag){var r=svg.getBoundingClientRect(), s=Math.max(vb.w/r.width, vb.h/r.height);
      vb.x=drag.vx-(e.clientX-drag.x)*s; vb.y=drag.vy-(e.clientY-drag.y)*s; apply();}
    var g=e.target.closest?e.target.closest('[data-tip]'):null;
    if(g&&!drag){tip.textContent=g.getAttribute('data-tip'); tip.style.display='block';
      tip.style.left=Math.min(e.clientX+14, window.innerWidth-580)+'px'; tip.style.top=(e.clientY+14)+'px';}
    else tip.style.display='none';});
  view.addEventListener('dblclick',function(){vb={x:0,y:0,w:w,h:h}; apply();});
  svg.querySelectorAll('title').forEach(function(t){if(t.parentNode.hasAttribute('data-tip')) t.remove();});
  // A tall plan starts at full width (its top part); double-click shows it whole.
  var aspect=view.clientHeight/Math.max(1,view.clientWidth);
  if(h>w*aspect) vb.h=w*aspect;
  apply();
})();
</script></body></html>
)";
  return o;
}

}  // namespace mscclpp::plan::render
