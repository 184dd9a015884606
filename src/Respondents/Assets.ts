/**
 * Static assets served under `/assets/`, kept as strings so that the compiled binary carries them.
 * `demo-dashboard.svg` is the picture of the demo survey's heatmap question.
 */
const demoDashboard = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 800 500" role="img" aria-labelledby="t">
<title id="t">A product dashboard: navigation, three key figures, a line chart and a table</title>
<rect width="800" height="500" fill="#f4f6fb"/>
<rect width="800" height="56" fill="#1f3b73"/>
<circle cx="32" cy="28" r="14" fill="#7fb2ff"/>
<rect x="58" y="20" width="140" height="16" rx="4" fill="#dbe7ff"/>
<rect x="600" y="18" width="120" height="20" rx="10" fill="#355799"/>
<circle cx="756" cy="28" r="14" fill="#dbe7ff"/>
<rect x="0" y="56" width="150" height="444" fill="#e4e9f4"/>
<g fill="#9aa9c7"><rect x="20" y="84" width="110" height="12" rx="4"/><rect x="20" y="116" width="90" height="12" rx="4"/>
<rect x="20" y="148" width="100" height="12" rx="4"/><rect x="20" y="180" width="80" height="12" rx="4"/></g>
<g fill="#ffffff" stroke="#d3dae8"><rect x="170" y="76" width="190" height="90" rx="8"/><rect x="380" y="76" width="190" height="90" rx="8"/>
<rect x="590" y="76" width="190" height="90" rx="8"/><rect x="170" y="186" width="400" height="294" rx="8"/><rect x="590" y="186" width="190" height="294" rx="8"/></g>
<g font-family="sans-serif" font-size="28" font-weight="700" fill="#1f3b73"><text x="190" y="140">1,284</text><text x="400" y="140">87%</text><text x="610" y="140">4.6</text></g>
<g fill="#9aa9c7"><rect x="190" y="92" width="80" height="10" rx="3"/><rect x="400" y="92" width="100" height="10" rx="3"/><rect x="610" y="92" width="70" height="10" rx="3"/></g>
<polyline fill="none" stroke="#3d7bf7" stroke-width="4" points="190,440 250,400 310,410 370,330 430,350 490,270 550,240"/>
<polyline fill="none" stroke="#f2a93b" stroke-width="3" points="190,450 250,430 310,420 370,400 430,390 490,360 550,350"/>
<g fill="#e4e9f4"><rect x="605" y="210" width="160" height="22" rx="4"/><rect x="605" y="246" width="160" height="22" rx="4"/>
<rect x="605" y="282" width="160" height="22" rx="4"/><rect x="605" y="318" width="160" height="22" rx="4"/><rect x="605" y="354" width="160" height="22" rx="4"/></g>
</svg>
`

export interface Asset {
  readonly contentType: string
  readonly body: string
}

export const assets: ReadonlyMap<string, Asset> = new Map([
  ["demo-dashboard.svg", { contentType: "image/svg+xml; charset=utf-8", body: demoDashboard }]
])
