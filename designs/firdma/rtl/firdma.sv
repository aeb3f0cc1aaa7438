// firdma top: AXI4-Lite registers, AXI4 read DMA -> buffer -> FIR -> write DMA, level irq.
`default_nettype none
module firdma #(
    parameter int DATA_W = 32,        // 32 or 64
    parameter int NTAPS = 16,         // 4..32
    parameter int FIFO_DEPTH = 512,   // input buffer depth in DATA_W beats (power of two)
    parameter logic [39:0] MEM_STYLE = "flop"  // "flop" or "macro" (needs FIFO_DEPTH = 512)
) (
    input  wire                clk,
    input  wire                rst_n,
    // AXI4-Lite slave
    input  wire [11:0]         s_axil_awaddr,
    input  wire [2:0]          s_axil_awprot,
    input  wire                s_axil_awvalid,
    output wire                s_axil_awready,
    input  wire [31:0]         s_axil_wdata,
    input  wire [3:0]          s_axil_wstrb,
    input  wire                s_axil_wvalid,
    output wire                s_axil_wready,
    output wire [1:0]          s_axil_bresp,
    output wire                s_axil_bvalid,
    input  wire                s_axil_bready,
    input  wire [11:0]         s_axil_araddr,
    input  wire [2:0]          s_axil_arprot,
    input  wire                s_axil_arvalid,
    output wire                s_axil_arready,
    output wire [31:0]         s_axil_rdata,
    output wire [1:0]          s_axil_rresp,
    output wire                s_axil_rvalid,
    input  wire                s_axil_rready,
    // AXI4 master (single ID: AWID/ARID are 0, BID/RID are not used)
    output wire [3:0]          m_axi_awid,
    output wire [31:0]         m_axi_awaddr,
    output wire [7:0]          m_axi_awlen,
    output wire [2:0]          m_axi_awsize,
    output wire [1:0]          m_axi_awburst,
    output wire                m_axi_awlock,
    output wire [3:0]          m_axi_awcache,
    output wire [2:0]          m_axi_awprot,
    output wire                m_axi_awvalid,
    input  wire                m_axi_awready,
    output wire [DATA_W-1:0]   m_axi_wdata,
    output wire [DATA_W/8-1:0] m_axi_wstrb,
    output wire                m_axi_wlast,
    output wire                m_axi_wvalid,
    input  wire                m_axi_wready,
    input  wire [3:0]          m_axi_bid,
    input  wire [1:0]          m_axi_bresp,
    input  wire                m_axi_bvalid,
    output wire                m_axi_bready,
    output wire [3:0]          m_axi_arid,
    output wire [31:0]         m_axi_araddr,
    output wire [7:0]          m_axi_arlen,
    output wire [2:0]          m_axi_arsize,
    output wire [1:0]          m_axi_arburst,
    output wire                m_axi_arlock,
    output wire [3:0]          m_axi_arcache,
    output wire [2:0]          m_axi_arprot,
    output wire                m_axi_arvalid,
    input  wire                m_axi_arready,
    input  wire [3:0]          m_axi_rid,
    input  wire [DATA_W-1:0]   m_axi_rdata,
    input  wire [1:0]          m_axi_rresp,
    input  wire                m_axi_rlast,
    input  wire                m_axi_rvalid,
    output wire                m_axi_rready,
    output wire                irq
);
    wire               start_req, abort_req;
    wire [31:0]        src_addr, dst_addr, cycles;
    wire [15:0]        len;
    wire [4:0]         shift, burst;
    wire [NTAPS*16-1:0] coefs;
    wire               busy, job_start, stop;
    wire               set_done, set_error, set_aborted;
    wire [3:0]         set_err_code;
    wire               rd_err, wr_err, rd_idle, wr_idle, wr_done;
    wire               push_valid, push_ready;
    wire [DATA_W-1:0]  push_data;
    wire               x_valid, x_ready, y_valid, y_ready;
    wire [15:0]        x_data, y_data;

    assign m_axi_awid = 4'd0;
    assign m_axi_arid = 4'd0;
    wire unused_ids = &{1'b0, m_axi_bid, m_axi_rid};

    firdma_regs #(.NTAPS(NTAPS), .DATA_W(DATA_W)) u_regs (
        .clk, .rst_n,
        .s_axil_awaddr, .s_axil_awprot, .s_axil_awvalid, .s_axil_awready,
        .s_axil_wdata, .s_axil_wstrb, .s_axil_wvalid, .s_axil_wready,
        .s_axil_bresp, .s_axil_bvalid, .s_axil_bready,
        .s_axil_araddr, .s_axil_arprot, .s_axil_arvalid, .s_axil_arready,
        .s_axil_rdata, .s_axil_rresp, .s_axil_rvalid, .s_axil_rready,
        .start_req, .abort_req, .src_addr, .dst_addr, .len, .shift, .burst, .coefs,
        .busy, .set_done, .set_error, .set_err_code, .set_aborted, .cycles, .irq
    );

    firdma_ctrl #(.DATA_W(DATA_W)) u_ctrl (
        .clk, .rst_n, .start_req, .abort_req, .src_addr, .dst_addr, .len,
        .rd_err, .wr_err, .rd_idle, .wr_idle, .wr_done,
        .busy, .job_start, .stop, .set_done, .set_error, .set_err_code, .set_aborted, .cycles
    );

    firdma_rd_dma #(.DATA_W(DATA_W)) u_rd (
        .clk, .rst_n, .job_start, .stop, .src_addr, .len, .burst,
        .m_axi_araddr, .m_axi_arlen, .m_axi_arsize, .m_axi_arburst, .m_axi_arlock,
        .m_axi_arcache, .m_axi_arprot, .m_axi_arvalid, .m_axi_arready,
        .m_axi_rdata, .m_axi_rresp, .m_axi_rlast, .m_axi_rvalid, .m_axi_rready,
        .push_valid, .push_data, .push_ready, .rd_err, .idle(rd_idle)
    );

    firdma_buffer #(.DATA_W(DATA_W), .FIFO_DEPTH(FIFO_DEPTH), .MEM_STYLE(MEM_STYLE)) u_buf (
        .clk, .rst_n, .flush(job_start), .len,
        .push_valid, .push_data, .push_ready,
        .s_valid(x_valid), .s_data(x_data), .s_ready(x_ready)
    );

    firdma_fir #(.NTAPS(NTAPS)) u_fir (
        .clk, .rst_n, .clear(job_start), .coefs, .shift,
        .in_valid(x_valid), .in_data(x_data), .in_ready(x_ready),
        .out_valid(y_valid), .out_data(y_data), .out_ready(y_ready)
    );

    firdma_wr_dma #(.DATA_W(DATA_W)) u_wr (
        .clk, .rst_n, .job_start, .stop, .dst_addr, .len, .burst,
        .y_valid, .y_data, .y_ready,
        .m_axi_awaddr, .m_axi_awlen, .m_axi_awsize, .m_axi_awburst, .m_axi_awlock,
        .m_axi_awcache, .m_axi_awprot, .m_axi_awvalid, .m_axi_awready,
        .m_axi_wdata, .m_axi_wstrb, .m_axi_wlast, .m_axi_wvalid, .m_axi_wready,
        .m_axi_bresp, .m_axi_bvalid, .m_axi_bready,
        .wr_err, .idle(wr_idle), .done(wr_done)
    );
endmodule
`default_nettype wire
